// The Tokenizer interface and the tokenizers. All of them reserve the ids of SpecialTokens:
// 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], 4 [MASK]; text tokens start at id 5. decode() writes the specials by name
// ([CLS], ...) and leaves [PAD] out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"

namespace relpos {

// Reserved token ids. Every tokenizer reserves these at the start of its vocabulary
// (bytes: ids 0..4 special, then the 256 bytes at 5..260).
struct SpecialTokens {
  int64_t pad = 0, unk = 1, cls = 2, sep = 3, mask = 4;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;  // "bytes", "sentencepiece:<hash>", "wordpiece:<file>"
  virtual int64_t vocab_size() const = 0;
  // The ids of `text`; by default encode_with_offsets() without the offsets.
  virtual std::vector<int64_t> encode(const std::string& text) const {
    std::vector<std::pair<int64_t, int64_t>> offsets;
    return encode_with_offsets(text, &offsets);
  }
  // Like encode(), plus the byte span [begin, end) of `text` each token covers (span QA).
  virtual std::vector<int64_t> encode_with_offsets(
      const std::string& text, std::vector<std::pair<int64_t, int64_t>>* offsets) const = 0;
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  // The file the tokenizer was loaded from when a run must keep a copy of it (SentencePiece
  // models, which relpos trains per corpus); empty for bytes and wordpiece (named in the config).
  virtual std::string model_file() const { return {}; }
  const SpecialTokens& special() const { return special_; }

 protected:
  SpecialTokens special_;
};


constexpr int64_t kNumSpecial = 5;
// "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" for ids 0..4.
const char* special_token_name(int64_t id);

// Raw bytes: id = 5 + byte value, vocabulary 261. decode(encode(x)) == x for any bytes.
std::unique_ptr<Tokenizer> make_bytes_tokenizer();

// BERT WordPiece from a vocab.txt (one token per line). The five special tokens [PAD] [UNK]
// [CLS] [SEP] [MASK] must be in the file; they get ids 0..4 and the other entries ids 5.. in
// file order (so ids differ from BERT's own numbering). Basic tokenization as in BERT: white
// space and control characters removed, punctuation and CJK characters split off, with
// `lower_case` lower-casing and accent stripping (Latin, Greek and Cyrillic letters; no full
// Unicode case folding); then greedy longest-match-first with "##" continuation pieces, and
// [UNK] for a word that cannot be covered or is longer than 100 characters.
// run_keeps_copy: a vocabulary relpos trained (make_trained_wordpiece_tokenizer), which
// model_file() names so that a run keeps a copy of it.
std::unique_ptr<Tokenizer> make_wordpiece_tokenizer(const std::string& vocab_path, bool lower_case,
                                                    bool run_keeps_copy = false);
// The words of BERT's basic tokenization above (before the word pieces), as UTF-8.
std::vector<std::string> wordpiece_basic_words(const std::string& text, bool lower_case);

// A WordPiece vocabulary trained on `train_texts` (core/data/wordpiece_trainer.h), cached as
// <cache_dir>/tokenizers/wordpiece-<hash>.txt (the hash covering the texts and the options); a
// later run with the same text loads it. model_file() names the cached file.
struct WordPieceTrainOptions;
std::unique_ptr<Tokenizer> make_trained_wordpiece_tokenizer(
    const std::vector<std::string>& train_texts, const WordPieceTrainOptions& opt,
    const std::string& cache_dir);

// GPT-2 / RoBERTa byte-level BPE from a Hugging Face vocab.json (token -> id) and merges.txt
// (one merge per line, in priority order, after an optional "#version" line). Text is split as
// GPT-2's pre-tokenizer does (contractions, letters, numbers, other characters, each with one
// leading space; white space runs), each piece's bytes as printable characters are merged in
// merges.txt order, and each symbol is looked up (a symbol not in vocab.json is [UNK]).
// [PAD] [UNK] [CLS] [SEP] [MASK] are RoBERTa's <pad> <unk> <s> </s> <mask>, or GPT-2's
// <|endoftext|> for each one the vocabulary lacks; the other tokens get ids 5.. in vocab.json id
// order (byte_bpe_rows). Special tokens written in the text are tokenized as text.
std::unique_ptr<Tokenizer> make_byte_bpe_tokenizer(const std::string& vocab_path,
                                                   const std::string& merges_path);
// The vocab.json id (checkpoint embedding row) of each relpos id of make_byte_bpe_tokenizer.
// Throws DataError naming the file: not a JSON object of distinct ids 0..N-1, or no token for a
// special.
std::vector<int64_t> byte_bpe_rows(const std::string& vocab_path);

struct SentencePieceOptions {
  int64_t vocab_size = 4000;
  std::string model_type = "unigram";  // unigram | bpe
  bool byte_fallback = true;
  std::string cache_dir = "data";
};
// SentencePiece trained on `train_texts` (the training split only) with identity normalization,
// so decode(encode(x)) == x; [PAD] [UNK] at 0, 1 and [CLS] [SEP] [MASK] as control symbols at
// 2..4. The model is cached as <cache_dir>/tokenizers/sentencepiece-<hash>.model, the hash
// covering the texts and the options; a later run with the same text loads it.
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::vector<std::string>& train_texts,
                                                        const SentencePieceOptions& opt);
// A SentencePiece model file trained by relpos (checks the special-token ids).
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::string& model_path);

// The tokenizer data.tokenizer names; SentencePiece, and WordPiece without data.vocab_file, are
// trained on `train_texts`.
std::unique_ptr<Tokenizer> make_tokenizer(const Config& cfg,
                                          const std::vector<std::string>& train_texts);

}  // namespace relpos
