// What the fuzz harnesses check, shared with the regression test (tests/test_fuzz_regressions.cpp)
// so that a crashing input found by fuzzing is replayed by ctest through the same code.
//
// The contract under test: the config parser and the data loaders, given ANY bytes, either
// return a result that satisfies the invariants below or throw a relpos::Error (ConfigError,
// DataError) with a message. Anything else — another exception type, a crash, a sanitizer
// report, a broken invariant — is a finding; the checks throw FuzzFinding for the invariants.
//
// Input layouts (the first byte(s) choose what is exercised):
//   config: lines starting with "--set " before a line "---cfg---" are overrides, the rest is a
//           YAML config file (the whole input when there is no such line).
//   data:   byte 0 picks the loader (mod 6): 0 text file, 1 TSV, 2 SQuAD JSON, 3 sentiment JSON,
//           4 WordPiece vocab.txt + text to encode, 5 WordNet data.noun; byte 1 holds options
//           (TSV classes, label names; WordPiece lower-casing); the rest is the file. For
//           WordPiece, the file is "vocab\0text".
#pragma once

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/data/corpus.h"
#include "core/util/text_util.h"
#include "core/data/tokenizer.h"
#include "core/util/errors.h"

namespace relpos::fuzz {

struct FuzzFinding : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require(bool ok, const std::string& what) {
  if (!ok) throw FuzzFinding(what);
}

// A private scratch folder for the files the loaders read (on tmpfs when available).
inline const std::string& scratch() {
  static const std::string dir = [] {
    const std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    const auto p = base / ("relpos_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return dir;
}

inline std::string put(const std::string& name, const std::string& bytes) {
  const std::string path = scratch() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

// ---- config ---------------------------------------------------------------------------------
inline void check_config(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  std::string yaml = in;
  const size_t sep = in.find("---cfg---\n");
  if (sep != std::string::npos) {
    yaml = in.substr(sep + 10);
    size_t pos = 0;
    while (pos < sep) {
      size_t nl = in.find('\n', pos);
      if (nl == std::string::npos || nl > sep) nl = sep;
      const std::string line = in.substr(pos, nl - pos);
      if (line.rfind("--set ", 0) == 0) sets.push_back(line.substr(6));
      pos = nl + 1;
    }
  }
  const std::string path = put("config.yaml", yaml);
  LoadedConfig loaded;
  try {
    loaded = load_config({path}, sets);
  } catch (const Error&) {
    return;  // a clear error is the right answer to a bad config
  }
  // A config that loads is saved with the run and loaded again by --resume: its resolved YAML
  // must parse back to the same config.
  const std::string text = to_yaml(loaded.config);
  Config again;
  try {
    again = parse_config(YAML::Load(text), nullptr);
  } catch (const std::exception& e) {
    throw FuzzFinding(std::string("the resolved config does not load again: ") + e.what() +
                      "\n--- resolved config ---\n" + text);
  }
  require(to_yaml(again) == text, "the resolved config changes on a round trip:\n" + text);
}

// ---- data loaders ---------------------------------------------------------------------------
inline void check_corpus(const Corpus& c) {
  require(!c.documents.empty(), "a corpus loaded with no documents");
  for (const auto& d : c.documents) {
    require(utf8_error_offset(d.text) == std::string::npos, "document text is not UTF-8");
    require(utf8_error_offset(d.text_b) == std::string::npos, "document text_b is not UTF-8");
    if (c.kind != CorpusKind::Qa) require(!trim(d.text).empty(), "an empty document was loaded");
  }
  if (c.kind == CorpusKind::Qa) {
    require(!c.questions.empty(), "a QA corpus with no questions");
    for (const auto& ctx : c.contexts)
      require(utf8_error_offset(ctx) == std::string::npos, "a context is not UTF-8");
    for (const auto& q : c.questions) {
      require(q.context >= 0 && q.context < static_cast<int64_t>(c.contexts.size()),
              "question " + q.id + ": context index out of range");
      require(q.document >= 0 && q.document < static_cast<int64_t>(c.documents.size()),
              "question " + q.id + ": document index out of range");
      const std::string& ctx = c.contexts[q.context];
      require(0 <= q.answer_begin && q.answer_begin < q.answer_end &&
                  q.answer_end <= static_cast<int64_t>(ctx.size()),
              "question " + q.id + ": empty answer span or span outside its context");
      require(!q.answers.empty() &&
                  ctx.substr(q.answer_begin, q.answer_end - q.answer_begin) == q.answers[0],
              "question " + q.id + ": the span is not the first answer");
      require(utf8_error_offset(q.question) == std::string::npos, "a question is not UTF-8");
    }
  }
}

inline void check_tokenizer(const Tokenizer& tok, const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> offsets;
  const auto ids = tok.encode_with_offsets(text, &offsets);
  require(offsets.size() == ids.size(), "one offset pair per token");
  int64_t last = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    require(ids[i] >= 0 && ids[i] < tok.vocab_size(), "token id out of the vocabulary");
    require(offsets[i].first >= last && offsets[i].first <= offsets[i].second &&
                offsets[i].second <= static_cast<int64_t>(text.size()),
            "token offsets not increasing or outside the text");
    last = offsets[i].first;
  }
  tok.decode(ids);
}

inline void check_data(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const int which = data[0] % 6;
  const uint8_t opt = data[1];
  const std::string body(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    switch (which) {
      case 0:
        check_corpus(load_text_file(put("corpus.txt", body)));
        break;
      case 1: {
        TsvOptions o;
        o.num_classes = 2 + opt % 3;
        if (opt & 0x10) o.label_names = {"neg", "pos", "mid", "x"}, o.label_names.resize(o.num_classes);
        if (opt & 0x20) o.text_columns = {"a", "b"};
        const Corpus c = load_tsv(put("data.tsv", body), o);
        check_corpus(c);
        for (const auto& d : c.documents)
          require(d.label >= 0 && d.label < o.num_classes, "a label out of range was loaded");
        break;
      }
      case 2:
        check_corpus(load_squad(put("squad.json", body)));
        break;
      case 3: {
        Corpus c;
        c.kind = CorpusKind::Labelled;
        load_sentiment_file(put("sentiment.json", body), "fuzz", c);
        for (const auto& d : c.documents) {
          require(d.label == 0 || d.label == 1, "a sentiment label out of range was loaded");
          require(utf8_error_offset(d.text) == std::string::npos, "sentence is not UTF-8");
        }
        break;
      }
      case 4: {
        const size_t nul = body.find('\0');
        const std::string vocab = body.substr(0, nul);
        const std::string text = nul == std::string::npos ? "" : body.substr(nul + 1);
        const auto tok = make_wordpiece_tokenizer(put("vocab.txt", vocab), (opt & 1) != 0);
        // The loaders hand the tokenizers valid UTF-8 only.
        if (utf8_error_offset(text) == std::string::npos) check_tokenizer(*tok, text);
        break;
      }
      case 5: {
        const std::string dir = scratch() + "/wordnet";
        std::filesystem::create_directories(dir);
        put("wordnet/data.noun", body);
        check_corpus(load_wordnet_qa(dir));
        break;
      }
    }
  } catch (const DataError&) {
    // a clear error is the right answer to a bad file
  }
}

}  // namespace relpos::fuzz
