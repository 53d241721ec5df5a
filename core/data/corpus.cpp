// load_corpus: built-in names, paths, and the data.max_documents / data.max_chars caps.
#include "core/data/corpus.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "core/util/text_util.h"
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

std::string resolve_cache_dir(const DataConfig& d) {
  // The default, `data`, names the checkout's data/ (where scripts/fetch_data.sh puts the
  // built-in corpora), or $RELPOS_DATA_DIR, from any working directory. Any other relative
  // cache_dir resolves against the working directory, as data.corpus and every other path does.
  const bool default_dir = d.cache_dir == DataConfig{}.cache_dir;
  const char* env = std::getenv("RELPOS_DATA_DIR");
  if (env && *env && default_dir) return env;
  const std::filesystem::path p(d.cache_dir);
  if (p.is_absolute() || !default_dir) return p.string();
  return (std::filesystem::path(RELPOS_SOURCE_DIR) / p).lexically_normal().string();
}

namespace {

// One corpus named by `name` (the value of config key `key`), capped.
Corpus load_one(const Config& cfg, const std::string& key, const std::string& name) {
  const DataConfig& d = cfg.data;
  const std::string cache = resolve_cache_dir(d);
  Corpus c;
  if (name == "sotu") {
    c = load_sotu(cache + "/sotu");
  } else if (name == "sentiment") {
    c = load_sentiment(cache + "/sentiment");
  } else if (name == "wordnet_qa") {
    c = load_wordnet_qa(wordnet_dir(cache));
  } else {
    namespace fs = std::filesystem;
    const fs::path p(name);
    if (fs::is_directory(p)) {
      c = load_text_folder(name);
    } else if (!fs::exists(p)) {
      throw DataError(fmt::format("{}: '{}' is neither a built-in corpus (sotu, sentiment, "
                                  "wordnet_qa) nor an existing file or folder",
                                  key, name));
    } else if (ends_with(name, ".tsv")) {
      TsvOptions o;
      o.text_columns = d.tsv_text_columns;
      o.label_column = d.tsv_label_column;
      o.label_names = d.label_names;
      o.num_classes = cfg.task.num_classes;
      c = load_tsv(name, o);
    } else if (ends_with(name, ".json")) {
      c = load_squad(name);
    } else {
      c = load_text_file(name);
    }
  }
  cap_documents(c, d.max_documents);
  cap_chars(c, d.max_chars);
  if (c.documents.empty())
    throw DataError(fmt::format("{} '{}': empty after data.max_documents = {} and "
                                "data.max_chars = {}",
                                key, c.name, d.max_documents, d.max_chars));
  return c;
}

// Appends `extra`'s documents (and QA questions and contexts, re-indexed) to `c`, marked as
// split `split`.
void append_split(Corpus& c, Corpus extra, int split, const std::string& key) {
  if (extra.kind != c.kind)
    throw DataError(fmt::format("{} '{}' is {} data, but data.corpus '{}' is {} data", key,
                                extra.name, corpus_kind_name(extra.kind), c.name,
                                corpus_kind_name(c.kind)),
                    "give the same kind of file for the corpus and its validation / test file");
  // Labelled files: sentence pairs and single sentences cannot share one classifier layout.
  auto pairs = [](const Corpus& x) {
    return !x.documents.empty() && !x.documents[0].text_b.empty();
  };
  if (c.kind == CorpusKind::Labelled && pairs(c) != pairs(extra))
    throw DataError(fmt::format("{} '{}' has {}, but data.corpus '{}' has {}", key, extra.name,
                                pairs(extra) ? "sentence pairs" : "single sentences", c.name,
                                pairs(c) ? "sentence pairs" : "single sentences"),
                    "give files with the same text columns (data.tsv_text_columns)");
  const auto doc0 = static_cast<int64_t>(c.documents.size());
  const auto ctx0 = static_cast<int64_t>(c.contexts.size());
  for (auto& doc : extra.documents) {
    doc.fixed_split = split;
    c.documents.push_back(std::move(doc));
  }
  for (auto& ctx : extra.contexts) c.contexts.push_back(std::move(ctx));
  for (auto& q : extra.questions) {
    q.document += doc0;
    q.context += ctx0;
    c.questions.push_back(std::move(q));
  }
  c.source += fmt::format("; {}: {}", split == 1 ? "validation" : "test", extra.source);
}

}  // namespace

Corpus load_corpus(const Config& cfg) {
  const DataConfig& d = cfg.data;
  Corpus c = load_one(cfg, "data.corpus", d.corpus);
  if (!d.valid_corpus.empty())
    append_split(c, load_one(cfg, "data.valid_corpus", d.valid_corpus), 1, "data.valid_corpus");
  if (!d.test_corpus.empty())
    append_split(c, load_one(cfg, "data.test_corpus", d.test_corpus), 2, "data.test_corpus");
  return c;
}

}  // namespace relpos
