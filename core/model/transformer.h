// The transformer body shared by every task: token (+ segment) embeddings, stacked position
// encodings, blocks of attention + GELU feed-forward (pre-LN or post-LN), final norm.
// Encoder (bidirectional) and decoder-only (causal) modes differ only in the attention mask.
// ALBERT options: factorized embeddings (E < D, then a projection E -> D) and one block whose
// parameters every layer shares.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <vector>

#include "core/config/config.h"
#include "core/model/attention.h"

namespace relpos {

// norm(x) with x in the norm's own dtype: under bf16 autocast (Config::precision) x arrives in
// bfloat16, which LibTorch 1.13's CPU layer_norm refuses next to float32 weights; CUDA autocast
// runs norms in float32 too.
inline torch::Tensor apply_norm(torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  const auto dtype = norm->weight.scalar_type();
  return norm(x.scalar_type() == dtype ? x : x.to(dtype));
}

// GELU as model.activation names it: "gelu" (exact, erf) or "gelu_tanh" (tanh approximation).
torch::Tensor activation(const torch::Tensor& x, const std::string& kind);

// A LayerNorm over `width` features with model.norm_eps.
torch::nn::LayerNorm layer_norm(int64_t width, double eps);

// The stacked position encodings of a model, registered under their variant names, so that
// their parameters are `position.<variant>.<name>`.
class PositionStackImpl : public torch::nn::Module {
 public:
  PositionStackImpl(const ModelDims& dims, const PositionConfig& cfg);
  const EncodingList& encodings() const { return encodings_; }
  // Hook 1 of every encoding, in order. x (B,T,E).
  torch::Tensor embed(torch::Tensor x, int64_t offset);
  // Hook 1 of every encoding at per-sequence positions (B,T) int64.
  torch::Tensor embed_at(torch::Tensor x, const torch::Tensor& positions);
  // Smallest max_length() over the stack, or -1 when none has a limit.
  int64_t max_length() const;
  // Smallest table_length() over the stack, or -1 when none has a table.
  int64_t table_length() const;

 private:
  EncodingList encodings_;
};
TORCH_MODULE(PositionStack);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& cfg);
  torch::Tensor forward(torch::Tensor x, const AttentionContext& ctx,
                        const EncodingList& encodings, const torch::Tensor& key_mask,
                        AttentionRecord* record);

  MultiHeadAttention attention{nullptr};
  torch::nn::LayerNorm attention_norm{nullptr}, ff_norm{nullptr};
  torch::nn::Linear ff_in{nullptr}, ff_out{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  bool pre_norm_;
  std::string activation_;
};
TORCH_MODULE(Block);

struct ForwardOptions {
  int64_t offset = 0;       // position of the first token
  // (B,T) int64 position of every token (training with position.randomized_max); undefined:
  // offset .. offset+T-1. Replaces offset when given.
  torch::Tensor positions;
  torch::Tensor segments;   // (B,T) int64 segment ids, when the model has segment embeddings
  torch::Tensor key_mask;   // (B,T) bool, false at padding
  std::vector<AttentionRecord>* records = nullptr;  // filled with one record per layer
};

class TransformerImpl : public torch::nn::Module {
 public:
  TransformerImpl(const ModelConfig& model, const PositionConfig& position, int64_t vocab_size);

  // tokens (B,T) int64 -> hidden states (B,T,D).
  torch::Tensor forward(const torch::Tensor& tokens, const ForwardOptions& opts = {});

  // Token embeddings with positions added and projected to D: (B,T,D), before the blocks.
  torch::Tensor embed(const torch::Tensor& tokens, const ForwardOptions& opts);

  // For each stacked encoding that adds to the input (hook 1): its position-only score
  // (P W_Q^h)(P W_K^h)ᵀ/√d at layer 0 (the position-only part, before any LayerNorm and
  // without the projections' biases), (H,T,T) with P = what the encoding adds at positions
  // 0..T-1 (projected to D when embeddings are factorized); undefined for the others.
  std::vector<torch::Tensor> input_position_scores(int64_t T);

  // Fused attention on (every block's forward passes that record nothing) or off. On needs
  // every stacked encoding to allow it (FusedScores): ConfigError otherwise, naming it. The
  // constructor chooses from model.attention_impl (auto: on where LibTorch has the kernel and
  // every encoding allows it).
  void use_fused_attention(bool on);
  // "fused" or "eager": what the forward passes that record nothing run.
  std::string attention_path() const { return fused_ ? "fused" : "eager"; }

  const ModelConfig& config() const { return cfg_; }
  int64_t vocab_size() const { return vocab_size_; }
  Block block(int64_t layer) const;  // the block applied at `layer`

  torch::nn::Embedding token_embedding{nullptr}, segment_embedding{nullptr};
  torch::nn::Linear embedding_projection{nullptr};
  torch::nn::LayerNorm embedding_norm{nullptr}, final_norm{nullptr};
  torch::nn::Dropout embedding_dropout{nullptr};
  PositionStack position{nullptr};
  torch::nn::ModuleList blocks{nullptr};

 private:
  ModelConfig cfg_;
  int64_t vocab_size_;
  bool fused_ = false;
};
TORCH_MODULE(Transformer);

// Normal(0, std) weights, zero biases, unit LayerNorm (BERT's init).
void init_weights(torch::nn::Module& module, double std);

}  // namespace relpos
