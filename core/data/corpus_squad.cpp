// SQuAD v1.1 JSON: articles of paragraphs (a context and its questions). Every answer must
// occur at its answer_start, which counts characters (code points), as Python's str does.
#include <fmt/format.h>

#include <type_traits>

#include "core/data/corpus.h"
#include "core/util/json_util.h"
#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

const char* kExpected =
    "SQuAD v1.1: {\"data\": [{\"title\", \"paragraphs\": [{\"context\", \"qas\": [{\"id\", "
    "\"question\", \"answers\": [{\"answer_start\", \"text\"}]}]}]}]}";

// `where` is the record's location: a string, or a function that finds it (only for an error).
template <class Where>
std::string where_text(const Where& where) {
  if constexpr (std::is_invocable_v<const Where&>)
    return where();
  else
    return where;
}

template <class Where>
const nlohmann::json& field(const nlohmann::json& obj, const char* key,
                            bool (nlohmann::json::*is)() const, const char* type,
                            const Where& where) {
  if (!obj.is_object() || !obj.contains(key) || !(obj[key].*is)())
    throw DataError(fmt::format("{}: '{}' missing or not {} (expected {})", where_text(where), key,
                                type, kExpected));
  return obj[key];
}

// Byte offset of every code point of valid UTF-8 `s`, plus s.size() at the end.
std::vector<int64_t> codepoint_offsets(const std::string& s) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < s.size()) {
    out.push_back(static_cast<int64_t>(pos));
    next_codepoint(s, pos);
  }
  out.push_back(static_cast<int64_t>(s.size()));
  return out;
}

}  // namespace

Corpus load_squad(const std::string& path) {
  const std::string raw = read_file(path, "SQuAD file");
  const nlohmann::json j = parse_json(raw, path, kExpected);
  Corpus c;
  c.name = path;
  c.source = "SQuAD v1.1 file " + path;
  c.kind = CorpusKind::Qa;
  const auto& data = field(j, "data", &nlohmann::json::is_array, "an array", path);
  for (size_t a = 0; a < data.size(); ++a) {
    const std::string wa = fmt::format("{}: data[{}]", path, a);
    const auto& article = data[a];
    const std::string title =
        article.is_object() && article.contains("title") && article["title"].is_string()
            ? article["title"].get<std::string>()
            : fmt::format("article {}", a);
    const auto& paragraphs =
        field(article, "paragraphs", &nlohmann::json::is_array, "an array", wa);
    const int64_t doc = static_cast<int64_t>(c.documents.size());
    c.documents.push_back({title, "", "", -1});
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string wp = fmt::format("{}.paragraphs[{}]", wa, p);
      const std::string& context =
          field(paragraphs[p], "context", &nlohmann::json::is_string, "a string", wp)
              .get_ref<const std::string&>();
      const auto& qas = field(paragraphs[p], "qas", &nlohmann::json::is_array, "an array", wp);
      const int64_t ctx = static_cast<int64_t>(c.contexts.size());
      c.contexts.push_back(context);
      const std::vector<int64_t> cp = codepoint_offsets(context);
      const int64_t n_chars = static_cast<int64_t>(cp.size()) - 1;
      for (size_t q = 0; q < qas.size(); ++q) {
        QaExample ex;
        ex.id = field(qas[q], "id", &nlohmann::json::is_string, "a string",
                      [&] { return fmt::format("{}.qas[{}]", wp, q); })
                    .get<std::string>();
        // Point at the record's line: the first place its id occurs in the file. Found only for
        // an error message: the search runs from the file's start, so finding it for every
        // question made loading quadratic (a 5 MB file of 20k questions took 40 s).
        const auto wq = [&] {
          return fmt::format("{}: data[{}].paragraphs[{}].qas[{}] (id '{}')",
                             locate(raw, path, "\"" + ex.id + "\""), a, p, q, ex.id);
        };
        ex.question = field(qas[q], "question", &nlohmann::json::is_string, "a string", wq)
                          .get<std::string>();
        if (trim(ex.question).empty()) throw DataError(wq() + ": empty question");
        const auto& answers = field(qas[q], "answers", &nlohmann::json::is_array, "an array", wq);
        if (answers.empty())
          throw DataError(wq() +
                          ": no answers (expected at least one; SQuAD v2 unanswerable "
                          "questions are not supported)");
        for (size_t k = 0; k < answers.size(); ++k) {
          const auto wk = [&] { return fmt::format("{}, answers[{}]", wq(), k); };
          const std::string text =
              field(answers[k], "text", &nlohmann::json::is_string, "a string", wk)
                  .get<std::string>();
          const int64_t start = field(answers[k], "answer_start",
                                      &nlohmann::json::is_number_integer, "an integer", wk)
                                    .get<int64_t>();
          if (text.empty()) throw DataError(wk() + ": empty answer text");
          if (n_chars == 0)
            throw DataError(fmt::format("{}: the paragraph's context is empty (expected the text "
                                        "the answer '{}' occurs in)",
                                        wk(), printable_utf8(text)));
          if (start < 0 || start >= n_chars)
            throw DataError(
                fmt::format("{}: answer_start {} outside the context of {} characters "
                            "(expected 0..{})",
                            wk(), start, n_chars, n_chars - 1));
          const int64_t b = cp[start];
          if (context.compare(b, text.size(), text) != 0)
            throw DataError(
                fmt::format("{}: answer '{}' does not occur at answer_start {} (the "
                            "context has '{}' there; expected the answer text at that "
                            "character offset)",
                            wk(), printable_utf8(text), start,
                            printable_utf8(context.substr(b, text.size()))));
          if (k == 0) {
            ex.answer_begin = b;
            ex.answer_end = b + static_cast<int64_t>(text.size());
          }
          ex.answers.push_back(text);
        }
        ex.context = ctx;
        ex.document = doc;
        c.questions.push_back(std::move(ex));
      }
    }
  }
  if (c.questions.empty())
    throw DataError(fmt::format("{}: empty corpus (no questions; expected {})", path, kExpected));
  return c;
}

}  // namespace relpos
