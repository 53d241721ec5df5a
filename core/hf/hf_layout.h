// Where each parameter of relpos's model comes from in a Hugging Face checkpoint of each
// architecture, and back (BERT only). The facts, per architecture:
//   BERT / RoBERTa  post-LN; embeddings word + position + token type, then LayerNorm; per layer
//                   attention.self.{query,key,value}, attention.output.{dense,LayerNorm},
//                   intermediate.dense, output.{dense,LayerNorm}; MLM head dense -> activation
//                   -> LayerNorm -> decoder tied to the word embeddings, plus a bias.
//                   relative_key(_query): per layer attention.self.distance_embedding, 2M-1 rows
//                   indexed by (query - key) + M - 1, i.e. relpos's r = j - i table reversed.
//                   RoBERTa: positions start at row pad_token_id + 1.
//   ALBERT          as BERT with embeddings of width E, their LayerNorm over E, a projection
//                   encoder.embedding_hidden_mapping_in (E -> D), one shared layer
//                   encoder.albert_layer_groups.0.albert_layers.0.{attention.{query,key,value,
//                   dense,LayerNorm}, ffn, ffn_output, full_layer_layer_norm}, head predictions.*.
//   GPT-2           pre-LN, causal; wte, wpe; per layer h.N.{ln_1, attn.c_attn (q, k, v fused),
//                   attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f; Conv1D weights stored
//                   (in, out), the transpose of a Linear's; output layer tied to wte, no bias.
#pragma once

#include <string>
#include <vector>

#include "core/hf/hf_config.h"
#include "core/hf/hf_weights.h"
#include "core/model/model.h"

namespace relpos {

// A module with .weight and .bias in both models.
struct ModulePair {
  std::string relpos;  // e.g. "transformer.blocks.0.attention.query"
  std::string hf;      // e.g. "encoder.layer.0.attention.self.query" (base model: no prefix)
};

// The Linear and LayerNorm modules of a BERT-shaped model (embedding LayerNorm, every block, the
// MLM head's transform), BERT's names.
std::vector<ModulePair> bert_modules(int64_t layers);

// Hugging Face's per-layer relative table name in BERT.
std::string bert_distance_name(int64_t layer);

// Rows of relpos's relative table (r = j - i, -K..K) from Hugging Face's (query - key), and back:
// the same (2K+1, d) table reversed along the rows.
torch::Tensor reverse_distance_rows(const torch::Tensor& table);

struct MappedWeights {
  std::vector<std::string> notes;        // what the import did beyond copying (printed, recorded)
  std::vector<std::string> initialised;  // relpos parameters with no source (--init-missing-head)
};

// Fills every parameter of `model` (built from the config relpos derived from `hf`) from
// `weights`. vocab_rows[i]: the checkpoint's embedding row of relpos token id i (empty: the same
// order). Missing tensors and shape mismatches are gathered and thrown together (DataError); an
// output layer that is not tied to the input embeddings is a DataError. With init_missing_head,
// a checkpoint without any MLM-head tensor keeps the model's fresh head (listed in initialised).
MappedWeights map_hf_weights(const HfModelConfig& hf, HfWeights& weights, Model& model,
                             const std::vector<int64_t>& vocab_rows, bool init_missing_head);

}  // namespace relpos
