// Labelled sentences: GLUE-style TSV files and the UCI Sentiment Labelled Sentences shipped as
// test fixtures of npm sentiment@5.0.2.
#include <fmt/format.h>

#include <filesystem>

#include "core/data/corpus.h"
#include "core/util/json_util.h"
#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

int64_t column_index(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int64_t>(i);
  return -1;
}

// Parses a whole decimal integer; false when `s` is anything else.
bool parse_decimal_label(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = s[0] == '-' ? -v : v;
  return true;
}

// The class of a row's label cell: its index in data.label_names, or the integer itself, in
// 0..num_classes-1.
int64_t tsv_label(const std::string& path, int64_t line_no, const std::string& lab,
                  const TsvOptions& opt) {
  int64_t label = -1;
  if (!opt.label_names.empty()) {
    const int64_t k = column_index(opt.label_names, lab);
    if (k < 0)
      throw DataError(fmt::format("{}:{}: label '{}' is not one of data.label_names ({})", path,
                                  line_no, printable_utf8(lab), join_names(opt.label_names)));
    label = k;
  } else if (!parse_decimal_label(lab, label)) {
    throw DataError(fmt::format("{}:{}: label '{}' is not an integer (expected 0..{})", path,
                                line_no, printable_utf8(lab), opt.num_classes - 1),
                    "for text labels list them in data.label_names, e.g. "
                    "--set data.label_names=entailment,not_entailment");
  }
  if (label < 0 || label >= opt.num_classes)
    throw DataError(fmt::format("{}:{}: label {} out of range (expected 0..{} for "
                                "task.num_classes = {})",
                                path, line_no, label, opt.num_classes - 1, opt.num_classes));
  return label;
}

}  // namespace

Corpus load_tsv(const std::string& path, const TsvOptions& opt) {
  const std::string text = read_utf8_file(path, "TSV");
  std::vector<std::string> lines = split_on(text, '\n');
  for (auto& l : lines)
    if (!l.empty() && l.back() == '\r') l.pop_back();
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty())
    throw DataError(
        fmt::format("{}: empty corpus (no header row; expected a GLUE-style TSV with "
                    "a header such as 'sentence<TAB>label')",
                    path));
  const std::vector<std::string> header = split_on(lines[0], '\t');
  std::vector<std::string> shown;  // the header's names, control characters escaped
  for (const auto& h : header) shown.push_back(printable_utf8(h));
  const std::string columns = join_names(shown);

  const bool by_default = opt.text_columns.empty();
  std::vector<std::string> wanted = opt.text_columns;
  if (by_default)
    wanted = column_index(header, "sentence") >= 0
                 ? std::vector<std::string>{"sentence"}
                 : std::vector<std::string>{"sentence1", "sentence2"};
  if (wanted.size() > 2)
    throw DataError(fmt::format("{}: {} text columns asked for ({}); expected one or two", path,
                                wanted.size(), join_names(wanted)));
  std::vector<int64_t> text_idx;
  for (const auto& w : wanted) {
    const int64_t i = column_index(header, w);
    if (i < 0 && by_default)
      throw DataError(
          fmt::format("{}:1: no text column in the header (columns: {}; without "
                      "data.tsv_text_columns relpos reads the column 'sentence', or the pair "
                      "'sentence1' and 'sentence2'{})",
                      path, columns,
                      column_index(header, "sentence1") >= 0 ? ", and 'sentence2' is missing" : ""),
          "set data.tsv_text_columns to the file's text column(s), e.g. "
          "--set data.tsv_text_columns=[sentence1]");
    if (i < 0)
      throw DataError(fmt::format("{}:1: no column '{}' in the header (columns: {}; expected the "
                                  "columns of data.tsv_text_columns ({}) and '{}')",
                                  path, w, columns, join_names(wanted), opt.label_column),
                      "set data.tsv_text_columns and data.tsv_label_column to the file's names");
    text_idx.push_back(i);
  }
  const int64_t label_idx = column_index(header, opt.label_column);
  if (label_idx < 0)
    throw DataError(fmt::format("{}:1: no label column '{}' in the header (columns: {})", path,
                                opt.label_column, columns),
                    "set data.tsv_label_column to the file's label column");

  Corpus c;
  c.name = path;
  c.source = "TSV file " + path;
  c.kind = CorpusKind::Labelled;
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    const std::vector<std::string> cells = split_on(lines[ln], '\t');
    const int64_t line_no = static_cast<int64_t>(ln) + 1;
    if (cells.size() != header.size())
      throw DataError(
          fmt::format("{}:{}: {} tab-separated columns (expected {} as in the header: "
                      "{})",
                      path, line_no, cells.size(), header.size(), columns));
    Document d;
    d.name = fmt::format("line {}", line_no);
    d.text = cells[text_idx[0]];
    if (text_idx.size() > 1) d.text_b = cells[text_idx[1]];
    d.label = tsv_label(path, line_no, cells[label_idx], opt);
    if (trim(d.text).empty())
      throw DataError(fmt::format("{}:{}: empty text in column '{}'", path, line_no, wanted[0]));
    // A pair row without its second sentence would become a single sentence, [CLS] a [SEP],
    // among pairs: GLUE pair tasks have none, so it is a broken row.
    if (text_idx.size() > 1 && trim(d.text_b).empty())
      throw DataError(fmt::format("{}:{}: empty text in column '{}' (a sentence pair needs both "
                                  "sentences, '{}' and '{}')",
                                  path, line_no, wanted[1], wanted[0], wanted[1]),
                      fmt::format("fix the row, or for single sentences read one column: "
                                  "--set data.tsv_text_columns=[{}]",
                                  wanted[0]));
    c.documents.push_back(std::move(d));
  }
  if (c.documents.empty())
    throw DataError(fmt::format("{}: empty corpus (a header but no data rows)", path));
  return c;
}

void load_sentiment_file(const std::string& path, const std::string& tag, Corpus& out) {
  const std::string text = read_file(path, "sentiment fixture");
  const char* expected = "a JSON array of {\"text\": string, \"class\": 0 or 1}";
  const nlohmann::json j = parse_json(text, path, expected);
  if (!j.is_array())
    throw DataError(
        fmt::format("{}: top level is {} (expected {})", path, j.type_name(), expected));
  size_t n = j.size();
  // The package ends each file with {"text": "", "class": null}: a dummy, not a sentence.
  // (json::value() throws a type_error for a "text" that is not a string: found by fuzzing.)
  if (n > 0 && j[n - 1].is_object() && j[n - 1].contains("text") && j[n - 1]["text"].is_string() &&
      j[n - 1]["text"].get<std::string>().empty())
    --n;
  for (size_t i = 0; i < n; ++i) {
    const auto& r = j[i];
    const std::string where = fmt::format("{}: record {}", path, i);
    if (!r.is_object() || !r.contains("text") || !r["text"].is_string())
      throw DataError(fmt::format("{}: {} (expected {})", where, describe_json(r), expected));
    if (!r.contains("class") || !r["class"].is_number_integer() || r["class"].get<int64_t>() < 0 ||
        r["class"].get<int64_t>() > 1)
      throw DataError(fmt::format("{}: class {} out of range (expected 0 or 1)", where,
                                  r.contains("class") ? describe_json(r["class"]) : "missing"));
    const std::string sentence = trim(r["text"].get<std::string>());
    if (sentence.empty()) throw DataError(where + ": empty text (expected a sentence)");
    out.documents.push_back(
        {fmt::format("{}:{}", tag, i), sentence, "", r["class"].get<int64_t>()});
  }
}

Corpus load_sentiment(const std::string& dir) {
  const std::string fixtures = dir + "/package/test/fixtures";
  if (!std::filesystem::is_directory(fixtures))
    throw DataError(fmt::format("corpus 'sentiment': no cached data at '{}' (expected the unpacked "
                                "npm package sentiment@5.0.2 there)",
                                fixtures),
                    "run scripts/fetch_data.sh (it caches the built-in corpora under data/)");
  Corpus c;
  c.name = "sentiment";
  c.source = "UCI Sentiment Labelled Sentences (imdb, amazon, yelp; from npm sentiment@5.0.2)";
  c.kind = CorpusKind::Labelled;
  for (const char* tag : {"imdb", "amazon", "yelp"})
    load_sentiment_file(fixtures + "/" + tag + ".json", tag, c);
  return c;
}

}  // namespace relpos
