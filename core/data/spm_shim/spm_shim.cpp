// relpos's SentencePiece shim: see spm_shim.h for why it exists. Built as its own shared library
// (target relpos_spm_shim), never part of `core`.
#include "spm_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace sentencepiece::logging {
void SetMinLogLevel(int v);  // exported by libsentencepiece, not declared in its public headers
}

namespace {

char* copy_out(const std::string& s, size_t* size = nullptr) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  if (size) *size = s.size();
  return p;
}

int fail(char** error, const std::string& msg) {
  if (error) *error = copy_out(msg);
  return 1;
}

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  VectorIterator(const char* const* s, const size_t* len, int64_t n) : s_(s), len_(len), n_(n) {
    load();
  }
  bool done() const override { return i_ >= n_; }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return cur_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (i_ < n_) cur_.assign(s_[i_], len_[i_]);
  }
  const char* const* s_;
  const size_t* len_;
  int64_t n_;
  int64_t i_ = 0;
  std::string cur_;
};

}  // namespace

extern "C" {

int relpos_spm_abi(void) { return RELPOS_SPM_ABI; }

int relpos_spm_train(const char* const* sentences, const size_t* lengths, int64_t n,
                     const char* const* keys, const char* const* values, int64_t n_options,
                     char** model, size_t* model_size, char** error) {
  try {
    sentencepiece::logging::SetMinLogLevel(2);
    std::unordered_map<std::string, std::string> kwargs;
    for (int64_t i = 0; i < n_options; ++i) kwargs[keys[i]] = values[i];
    VectorIterator it(sentences, lengths, n);
    std::string serialized;
    const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &it, &serialized);
    if (!status.ok()) return fail(error, "SentencePiece training failed: " + status.ToString());
    *model = copy_out(serialized, model_size);
    return 0;
  } catch (const std::exception& e) {
    return fail(error, std::string("SentencePiece training failed: ") + e.what());
  } catch (...) {
    return fail(error, "SentencePiece training failed");
  }
}

void* relpos_spm_load(const char* model, size_t model_size, char** error) {
  try {
    sentencepiece::logging::SetMinLogLevel(2);
    auto* sp = new sentencepiece::SentencePieceProcessor();
    const auto status = sp->LoadFromSerializedProto(std::string(model, model_size));
    if (!status.ok()) {
      delete sp;
      fail(error, "cannot load the SentencePiece model: " + status.ToString());
      return nullptr;
    }
    return sp;
  } catch (const std::exception& e) {
    fail(error, std::string("cannot load the SentencePiece model: ") + e.what());
    return nullptr;
  }
}

void relpos_spm_unload(void* handle) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

int32_t relpos_spm_vocab_size(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize();
}

int relpos_spm_id_to_piece(void* handle, int32_t id, char** piece, size_t* size) {
  auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
  if (id < 0 || id >= sp->GetPieceSize()) return 1;
  *piece = copy_out(sp->IdToPiece(id), size);
  return 0;
}

int relpos_spm_encode(void* handle, const char* text, size_t size, int64_t* n, int32_t** ids,
                      uint32_t** begins, uint32_t** ends, char** error) {
  try {
    auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    const auto spt = sp->EncodeAsImmutableProto(std::string(text, size));
    const auto pieces = spt.pieces();
    const size_t k = pieces.size();
    *n = static_cast<int64_t>(k);
    *ids = static_cast<int32_t*>(std::malloc(sizeof(int32_t) * (k + 1)));
    *begins = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * (k + 1)));
    *ends = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * (k + 1)));
    for (size_t i = 0; i < k; ++i) {
      (*ids)[i] = static_cast<int32_t>(pieces[i].id());
      (*begins)[i] = pieces[i].begin();
      (*ends)[i] = pieces[i].end();
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(error, std::string("SentencePiece encoding failed: ") + e.what());
  }
}

int relpos_spm_decode(void* handle, const int32_t* ids, int64_t n, char** text, size_t* size,
                      char** error) {
  try {
    auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    std::string out;
    const auto status = sp->Decode(std::vector<int>(ids, ids + n), &out);
    if (!status.ok()) return fail(error, "SentencePiece decoding failed: " + status.ToString());
    *text = copy_out(out, size);
    return 0;
  } catch (const std::exception& e) {
    return fail(error, std::string("SentencePiece decoding failed: ") + e.what());
  }
}

void relpos_spm_free(void* p) { std::free(p); }

}  // extern "C"
