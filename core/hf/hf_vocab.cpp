#include "core/hf/hf_vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

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

ImportedVocab sentencepiece_vocab(const HfModelConfig& hf);
ImportedVocab bpe_vocab(const HfModelConfig& hf);

// The special tokens, then every byte's token.
bool is_byte_vocab(const std::vector<std::string>& lines) {
  const auto want = byte_vocab_lines();
  if (lines.size() != want.size()) return false;
  std::set<std::string> a(lines.begin(), lines.end()), b(want.begin(), want.end());
  return a == b;
}

ImportedVocab byte_vocab(const HfModelConfig& hf, const fs::path& path,
                         const std::vector<std::string>& lines) {
  ImportedVocab v;
  v.tokenizer = "bytes";
  v.copies.push_back({path.string(), "vocab.txt"});
  v.vocab_size = static_cast<int64_t>(lines.size());
  if (v.vocab_size != hf.vocab)
    throw DataError(fmt::format("{}: {} tokens (the byte vocabulary), but {} says vocab_size {}",
                                path.string(), v.vocab_size, hf.config_path, hf.vocab));
  std::map<std::string, int64_t> line_of;
  for (size_t i = 0; i < lines.size(); ++i) line_of[lines[i]] = static_cast<int64_t>(i);
  bool reordered = false;
  for (const auto& tok : byte_vocab_lines()) {
    v.rows.push_back(line_of.at(tok));
    reordered = reordered || v.rows.back() + 1 != static_cast<int64_t>(v.rows.size());
  }
  if (!reordered) v.rows.clear();
  v.notes.push_back(fmt::format(
      "vocab.txt holds the five special tokens and the 256 byte tokens <0x00>..<0xFF>: "
      "data.tokenizer bytes (token id 5 + byte value){}",
      reordered ? "; the embedding rows and the MLM output bias are reordered to match" : ""));
  return v;
}

ImportedVocab bert_vocab(const HfModelConfig& hf) {
  const fs::path path = fs::path(hf.dir) / "vocab.txt";
  if (!fs::is_regular_file(path)) {
    // A folder `relpos export` wrote for a SentencePiece or byte-level BPE run.
    if (fs::is_regular_file(fs::path(hf.dir) / "spiece.model")) return sentencepiece_vocab(hf);
    if (fs::is_regular_file(fs::path(hf.dir) / "vocab.json") &&
        fs::is_regular_file(fs::path(hf.dir) / "merges.txt"))
      return bpe_vocab(hf);
    throw DataError(fmt::format("{}: missing (a BERT folder has its WordPiece vocabulary there; "
                                "one relpos exported has vocab.txt, spiece.model, or vocab.json "
                                "and merges.txt)",
                                path.string()),
                    "download vocab.txt with the model");
  }
  const auto lines = vocab_lines(path.string());
  if (is_byte_vocab(lines)) return byte_vocab(hf, path, lines);
  ImportedVocab v;
  v.tokenizer = "wordpiece";
  v.copies.push_back({path.string(), "vocab.txt"});
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

ImportedVocab sentencepiece_vocab(const HfModelConfig& hf) {
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
  v.notes.push_back(std::string("spiece.model kept as tokenizer.model; its ids 0..4 are the special "
                                "tokens relpos reserves, so no row is reordered") +
                    (hf.arch == HfArch::Albert
                         ? ". relpos passes text to it as it is: Hugging Face's AlbertTokenizer "
                           "lower-cases first (do_lower_case)"
                         : ""));
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

std::vector<std::string> byte_vocab_lines() {
  std::vector<std::string> lines;
  for (int64_t s = 0; s < kNumSpecial; ++s) lines.push_back(special_token_name(s));
  for (int b = 0; b < 256; ++b) lines.push_back(fmt::format("<0x{:02X}>", b));
  return lines;
}

ExportedVocab export_vocab(const Config& cfg, int64_t vocab, int64_t max_positions) {
  const DataConfig& d = cfg.data;
  ExportedVocab e;
  auto check_count = [&](const std::string& file, int64_t tokens) {
    if (tokens != vocab)
      throw DataError(fmt::format("{}: {} tokens, but the run's embeddings have {} rows", file,
                                  tokens, vocab));
  };
  std::string text;
  if (d.tokenizer == "wordpiece") {
    const std::vector<std::string> lines = vocab_lines(d.vocab_file);
    const auto rows = wordpiece_rows(d.vocab_file);
    check_count(d.vocab_file, static_cast<int64_t>(rows.size()));
    for (int64_t id : rows) text += lines[static_cast<size_t>(id)] + "\n";
    const nlohmann::ordered_json tc = {{"tokenizer_class", "BertTokenizer"},
                                       {"do_lower_case", d.lower_case},
                                       {"model_max_length", max_positions}};
    e.files = {{"vocab.txt", text}, {"tokenizer_config.json", tc.dump(2) + "\n"}};
  } else if (d.tokenizer == "bytes") {
    const auto lines = byte_vocab_lines();
    check_count("the byte vocabulary", static_cast<int64_t>(lines.size()));
    for (const auto& l : lines) text += l + "\n";
    e.files = {{"vocab.txt", text}};
    e.notes.push_back("vocab.txt maps bytes to ids: [PAD] [UNK] [CLS] [SEP] [MASK] are 0..4, "
                      "<0xHH> is id 5 + the byte's value; Hugging Face's BertTokenizer reads it "
                      "but splits text into words, not bytes: give the model 5 + each byte of "
                      "the UTF-8 text");
  } else if (d.tokenizer == "sentencepiece") {
    if (d.tokenizer_file.empty() || !fs::is_regular_file(d.tokenizer_file))
      throw DataError(fmt::format("the run's SentencePiece model is missing ('{}'; a run keeps it "
                                  "as tokenizer.model)",
                                  d.tokenizer_file),
                      "restore tokenizer.model from a copy of the run folder");
    check_count(d.tokenizer_file, load_sentencepiece_tokenizer(d.tokenizer_file)->vocab_size());
    e.files = {{"spiece.model", read_file(d.tokenizer_file, "SentencePiece model")}};
    e.notes.push_back("spiece.model: the run's SentencePiece model (ids 0..4 [PAD] [UNK] [CLS] "
                      "[SEP] [MASK]); Hugging Face's BertTokenizer has no use for it: tokenize "
                      "with the sentencepiece library, whose ids are the model's");
  } else if (d.tokenizer == "byte_bpe") {
    const auto rows = byte_bpe_rows(d.vocab_file);
    check_count(d.vocab_file, static_cast<int64_t>(rows.size()));
    if (std::set<int64_t>(rows.begin(), rows.end()).size() != rows.size())
      throw DataError(fmt::format("{}: one token stands for several of relpos's special tokens "
                                  "(GPT-2's <|endoftext|>), so no vocab.json gives each id one "
                                  "token",
                                  d.vocab_file));
    const auto j = parse_json(read_utf8_file(d.vocab_file, "byte-level BPE vocabulary"),
                              d.vocab_file, "a JSON object of token -> id");
    std::map<int64_t, std::string> token_of;
    for (const auto& [tok, id] : j.items()) token_of[id.get<int64_t>()] = tok;
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (size_t i = 0; i < rows.size(); ++i) out[token_of.at(rows[i])] = static_cast<int64_t>(i);
    e.files = {{"vocab.json", out.dump() + "\n"},
               {"merges.txt", read_utf8_file(d.merges_file, "byte-level BPE merges")}};
  } else {
    throw DataError(fmt::format("data.tokenizer {}: no tokenizer files to export", d.tokenizer));
  }
  return e;
}

ImportedVocab import_vocab(const HfModelConfig& hf) {
  switch (hf.arch) {
    case HfArch::Bert: return bert_vocab(hf);
    case HfArch::Albert: return sentencepiece_vocab(hf);
    case HfArch::Roberta:
    case HfArch::Gpt2: return bpe_vocab(hf);
  }
  return {};
}

}  // namespace relpos
