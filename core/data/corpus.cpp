// load_corpus: built-in names, paths, and the data.max_documents / data.max_chars caps.
#include "core/data/corpus.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/data/text_util.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

// Keeps the first `max_docs` documents (QA: split units, with their questions and contexts).
void cap_documents(Corpus& c, int64_t max_docs) {
  if (max_docs <= 0 || static_cast<int64_t>(c.documents.size()) <= max_docs) return;
  c.documents.resize(max_docs);
  if (c.kind != CorpusKind::Qa) return;
  std::vector<QaExample> kept;
  for (auto& q : c.questions)
    if (q.document < max_docs) kept.push_back(std::move(q));
  c.questions = std::move(kept);
  // Contexts are referenced in order, so the unused ones are a tail.
  int64_t last = -1;
  for (const auto& q : c.questions) last = std::max(last, q.context);
  c.contexts.resize(last + 1);
}

// Cuts text corpora after `max_chars` bytes (at a UTF-8 character boundary).
void cap_chars(Corpus& c, int64_t max_chars) {
  if (max_chars <= 0 || c.kind == CorpusKind::Qa) return;
  int64_t used = 0;
  size_t k = 0;
  for (; k < c.documents.size() && used < max_chars; ++k) {
    std::string& t = c.documents[k].text;
    const int64_t room = max_chars - used;
    if (static_cast<int64_t>(t.size()) > room) {
      size_t cut = room;
      while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
      t.resize(cut);
    }
    used += static_cast<int64_t>(t.size());
  }
  c.documents.resize(k);
  while (!c.documents.empty() && c.documents.back().text.empty()) c.documents.pop_back();
}

}  // namespace

Corpus load_corpus(const Config& cfg) {
  const DataConfig& d = cfg.data;
  Corpus c;
  if (d.corpus == "sotu") {
    c = load_sotu(d.cache_dir + "/sotu");
  } else if (d.corpus == "sentiment") {
    c = load_sentiment(d.cache_dir + "/sentiment");
  } else if (d.corpus == "wordnet_qa") {
    c = load_wordnet_qa(wordnet_dir(d.cache_dir));
  } else {
    namespace fs = std::filesystem;
    const fs::path p(d.corpus);
    if (fs::is_directory(p)) {
      c = load_text_folder(d.corpus);
    } else if (!fs::exists(p)) {
      throw DataError(
          fmt::format("data.corpus: '{}' is neither a built-in corpus (sotu, "
                      "sentiment, wordnet_qa) nor an existing file or folder",
                      d.corpus));
    } else if (ends_with(d.corpus, ".tsv")) {
      TsvOptions o;
      o.text_columns = d.tsv_text_columns;
      o.label_column = d.tsv_label_column;
      o.label_names = d.label_names;
      o.num_classes = cfg.task.num_classes;
      c = load_tsv(d.corpus, o);
    } else if (ends_with(d.corpus, ".json")) {
      c = load_squad(d.corpus);
    } else {
      c = load_text_file(d.corpus);
    }
  }
  cap_documents(c, d.max_documents);
  cap_chars(c, d.max_chars);
  if (c.documents.empty())
    throw DataError(
        fmt::format("corpus '{}': empty after data.max_documents = {} and "
                    "data.max_chars = {}",
                    c.name, d.max_documents, d.max_chars));
  return c;
}

}  // namespace relpos
