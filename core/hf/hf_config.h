// A Hugging Face model folder's config.json, read for the four architectures relpos imports
// (BERT, ALBERT, RoBERTa, GPT-2) and checked for what relpos's model can represent.
// Keys a saved config leaves out take the defaults of Hugging Face's config classes (it writes
// only the values that differ from them).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace relpos {

enum class HfArch { Bert, Albert, Roberta, Gpt2 };

struct HfModelConfig {
  std::string dir;          // the model folder
  std::string config_path;  // DIR/config.json
  nlohmann::json json;      // config.json as read
  HfArch arch = HfArch::Bert;
  std::string model_type;   // "bert", "albert", "roberta", "gpt2"
  int64_t vocab = 0;
  int64_t width = 0;        // hidden_size / n_embd (D)
  int64_t embed_width = 0;  // ALBERT's embedding_size (E); = width otherwise
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t ff_width = 0;
  int64_t max_positions = 0;    // rows of the position table (max_position_embeddings / n_positions)
  int64_t position_offset = 0;  // RoBERTa: the first real position's row (pad_token_id + 1)
  int64_t type_vocab = 0;       // token types; 0 for GPT-2
  std::string position_type;    // absolute | relative_key | relative_key_query
  std::string activation;       // relpos's name: gelu | gelu_tanh
  double norm_eps = 0;
  double dropout = 0, attention_dropout = 0, init_std = 0.02;
  bool causal = false;          // GPT-2
  bool pre_norm = false;        // GPT-2

  int64_t head_dim() const { return width / heads; }
};

// The architectures relpos imports, comma-separated (for messages).
std::string hf_supported_architectures();

// Reads DIR/config.json. Throws DataError naming the file and key for a missing or unreadable
// file, a value of the wrong type, an architecture relpos does not import (naming the ones it
// does), and a setting relpos's model cannot represent (naming the key and the value).
HfModelConfig read_hf_config(const std::string& dir);

}  // namespace relpos
