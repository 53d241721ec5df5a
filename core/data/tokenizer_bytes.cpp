// Byte tokenizer: the quickest runs, no training, exact round trip.
#include <fmt/format.h>

#include <filesystem>

#include "core/data/corpus.h"
#include "core/data/tokenizer.h"
#include "core/data/wordpiece_trainer.h"
#include "core/util/errors.h"

namespace relpos {

const char* special_token_name(int64_t id) {
  static const char* names[kNumSpecial] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  return id >= 0 && id < kNumSpecial ? names[id] : "";
}

namespace {

class BytesTokenizer : public Tokenizer {
 public:
  std::string name() const override { return "bytes"; }
  int64_t vocab_size() const override { return kNumSpecial + 256; }
  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int64_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i)
      ids[i] = kNumSpecial + static_cast<unsigned char>(text[i]);
    return ids;
  }
  std::vector<int64_t> encode_with_offsets(
      const std::string& text, std::vector<std::pair<int64_t, int64_t>>* offsets) const override {
    offsets->resize(text.size());
    for (size_t i = 0; i < text.size(); ++i)
      (*offsets)[i] = {static_cast<int64_t>(i), static_cast<int64_t>(i) + 1};
    return encode(text);
  }
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    for (int64_t id : ids) {
      if (id >= kNumSpecial && id < vocab_size())
        out += static_cast<char>(id - kNumSpecial);
      else if (id != special_.pad)
        out += special_token_name(id);
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> make_bytes_tokenizer() { return std::make_unique<BytesTokenizer>(); }

std::unique_ptr<Tokenizer> make_tokenizer(const Config& cfg,
                                          const std::vector<std::string>& train_texts) {
  const DataConfig& d = cfg.data;
  if (d.tokenizer == "bytes") return make_bytes_tokenizer();
  if (d.tokenizer == "wordpiece") {
    if (!d.vocab_file.empty()) return make_wordpiece_tokenizer(d.vocab_file, d.lower_case);
    WordPieceTrainOptions o;
    o.vocab_size = d.vocab_size;
    o.lower_case = d.lower_case;
    return make_trained_wordpiece_tokenizer(train_texts, o, resolve_cache_dir(d));
  }
  if (d.tokenizer == "sentencepiece") {
    if (!d.tokenizer_file.empty()) {
      if (!std::filesystem::is_regular_file(d.tokenizer_file))
        throw DataError(fmt::format("data.tokenizer_file: '{}' is not a file", d.tokenizer_file),
                        "give a SentencePiece model written by relpos (a run's tokenizer.model, "
                        "or <data.cache_dir>/tokenizers/sentencepiece-<hash>.model)");
      return load_sentencepiece_tokenizer(d.tokenizer_file);
    }
    SentencePieceOptions o;
    o.vocab_size = d.vocab_size;
    o.model_type = d.sentencepiece_model;
    o.byte_fallback = d.sentencepiece_byte_fallback;
    o.cache_dir = resolve_cache_dir(d);
    return make_sentencepiece_tokenizer(train_texts, o);
  }
  if (d.tokenizer == "byte_bpe") return make_byte_bpe_tokenizer(d.vocab_file, d.merges_file);
  throw DataError("data.tokenizer: unknown tokenizer '" + d.tokenizer +
                  "' (expected bytes, sentencepiece, wordpiece or byte_bpe)");
}

}  // namespace relpos
