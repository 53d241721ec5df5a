#include "core/hf/hf_vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/util/json_util.h"
#include "core/util/text_util.h"
#include "core/data/tokenizer.h"
#include "core/util/errors.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> vocab_lines(const std::string& path) {
  std::vector<std::string> lines = split_on(read_utf8_file(path, "WordPiece vocabulary"), '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // the final newline
  for (auto& l : lines)
    if (!l.empty() && l.back() == '\r') l.pop_back();
  return lines;
}

// Uncased BERT vocabularies hold no upper-case letters outside the bracketed special tokens.
bool looks_uncased(const std::vector<std::string>& lines) {
  for (const auto& l : lines) {
    if (l.size() > 1 && l.front() == '[' && l.back() == ']') continue;
    for (unsigned char c : l)
      if (std::isupper(c)) return false;
  }
  return true;
}

ImportedVocab bert_vocab(const HfModelConfig& hf) {
  const fs::path path = fs::path(hf.dir) / "vocab.txt";
  if (!fs::is_regular_file(path))
    throw DataError(fmt::format("{}: missing (a BERT folder has its WordPiece vocabulary there)",
                                path.string()),
                    "download vocab.txt with the model");
  ImportedVocab v;
  v.tokenizer = "wordpiece";
  v.copies.push_back({path.string(), "vocab.txt"});
  const auto lines = vocab_lines(path.string());
  // tokenizer_config.json says whether the vocabulary is cased; without it, the vocabulary does.
  const fs::path tc = fs::path(hf.dir) / "tokenizer_config.json";
  bool known = false;
  if (fs::is_regular_file(tc)) {
    const auto j = parse_json(read_utf8_file(tc.string(), "tokenizer config"), tc.string(),
                              "a JSON object");
    if (j.is_object() && j.contains("do_lower_case") && j["do_lower_case"].is_boolean()) {
      v.lower_case = j["do_lower_case"].get<bool>();
      known = true;
      v.notes.push_back(fmt::format("data.lower_case {} from tokenizer_config.json's do_lower_case",
                                    v.lower_case));
    }
  }
  if (!known) {
    v.lower_case = looks_uncased(lines);
    v.notes.push_back(fmt::format("data.lower_case {}: no do_lower_case in tokenizer_config.json, "
                                  "and vocab.txt has {} upper-case letters",
                                  v.lower_case, v.lower_case ? "no" : "some"));
  }
  // relpos's own WordPiece reads the file: what it refuses (a duplicate line, a missing special
  // token) fails the import rather than the first fine-tune.
  v.vocab_size = make_wordpiece_tokenizer(path.string(), v.lower_case)->vocab_size();
  if (v.vocab_size != hf.vocab)
    throw DataError(fmt::format("{}: {} tokens, but {} says vocab_size {}: the embedding rows "
                                "would not line up with the tokens",
                                path.string(), v.vocab_size, hf.config_path, hf.vocab));
  v.rows = wordpiece_rows(path.string());
  v.notes.push_back("token ids: relpos's WordPiece gives [PAD] [UNK] [CLS] [SEP] [MASK] ids 0..4 "
                    "and the other vocab.txt lines 5.. in file order; the embedding rows and the "
                    "MLM output bias are reordered to match");
  return v;
}

ImportedVocab albert_vocab(const HfModelConfig& hf) {
  const fs::path path = fs::path(hf.dir) / "spiece.model";
  if (!fs::is_regular_file(path))
    throw DataError(fmt::format("{}: missing (an ALBERT folder has its SentencePiece model there)",
                                path.string()),
                    "download spiece.model with the model");
  ImportedVocab v;
  v.tokenizer = "sentencepiece";
  v.copies.push_back({path.string(), "tokenizer.model"});
  // Checks that ids 0..4 are <pad> <unk> [CLS] [SEP] [MASK], the ids relpos reserves.
  v.vocab_size = load_sentencepiece_tokenizer(path.string())->vocab_size();
  if (v.vocab_size != hf.vocab)
    throw DataError(fmt::format("{}: {} pieces, but {} says vocab_size {}", path.string(),
                                v.vocab_size, hf.config_path, hf.vocab));
  v.notes.push_back("spiece.model kept as tokenizer.model; its ids 0..4 are the special tokens "
                    "relpos reserves, so no row is reordered. relpos passes text to it as it is: "
                    "Hugging Face's AlbertTokenizer lower-cases first (do_lower_case)");
  return v;
}

ImportedVocab bpe_vocab(const HfModelConfig& hf) {
  ImportedVocab v;
  v.tokenizer = "byte_bpe";
  for (const char* f : {"vocab.json", "merges.txt"}) {
    const fs::path path = fs::path(hf.dir) / f;
    if (!fs::is_regular_file(path))
      throw DataError(fmt::format("{}: missing (a {} folder has its byte-level BPE vocabulary in "
                                  "vocab.json and merges.txt)",
                                  path.string(), hf.model_type),
                      "download vocab.json and merges.txt with the model");
    v.copies.push_back({path.string(), f});
  }
  const std::string vocab = (fs::path(hf.dir) / "vocab.json").string();
  // relpos's own tokenizer reads both files: what it refuses fails the import, not the first
  // fine-tune.
  make_byte_bpe_tokenizer(vocab, (fs::path(hf.dir) / "merges.txt").string());
  v.rows = byte_bpe_rows(vocab);
  const auto tokens = static_cast<int64_t>(*std::max_element(v.rows.begin(), v.rows.end()) + 1);
  if (tokens != hf.vocab)
    throw DataError(
        fmt::format("{}: {} tokens, but {} says vocab_size {}: the embedding rows "
                    "would not line up with the tokens",
                    vocab, tokens, hf.config_path, hf.vocab));
  v.vocab_size = static_cast<int64_t>(v.rows.size());
  v.notes.push_back(fmt::format(
      "token ids: relpos's byte-level BPE gives [PAD] [UNK] [CLS] [SEP] [MASK] ids 0..4 ({}) and "
      "the other vocab.json tokens 5.. in id order; the embedding rows{} are reordered to match",
      hf.arch == HfArch::Gpt2 ? "each a copy of GPT-2's <|endoftext|> row, its only special token"
                              : "RoBERTa's <pad> <unk> <s> </s> <mask>",
      hf.arch == HfArch::Gpt2 ? "" : " and the MLM output bias"));
  return v;
}

}  // namespace

std::vector<int64_t> wordpiece_rows(const std::string& vocab_path) {
  const auto lines = vocab_lines(vocab_path);
  std::vector<int64_t> rows(kNumSpecial, -1);
  for (size_t i = 0; i < lines.size(); ++i) {
    bool special = false;
    for (int64_t s = 0; s < kNumSpecial; ++s)
      if (lines[i] == special_token_name(s)) {
        rows[s] = static_cast<int64_t>(i);
        special = true;
      }
    if (!special) rows.push_back(static_cast<int64_t>(i));
  }
  for (int64_t s = 0; s < kNumSpecial; ++s)
    if (rows[s] < 0)
      throw DataError(fmt::format("{}: no {} token (expected BERT's special tokens [PAD] [UNK] "
                                  "[CLS] [SEP] [MASK])",
                                  vocab_path, special_token_name(s)));
  return rows;
}

ImportedVocab import_vocab(const HfModelConfig& hf) {
  switch (hf.arch) {
    case HfArch::Bert: return bert_vocab(hf);
    case HfArch::Albert: return albert_vocab(hf);
    case HfArch::Roberta:
    case HfArch::Gpt2: return bpe_vocab(hf);
  }
  return {};
}

}  // namespace relpos
