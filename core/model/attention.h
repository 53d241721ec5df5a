// Multi-head self-attention that asks the stacked position encodings for their hooks and
// never looks at their names.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <memory>
#include <vector>

#include "core/position/position_encoding.h"

namespace relpos {

using EncodingList = std::vector<std::shared_ptr<PositionEncodingImpl>>;

// What one attention layer saw, for analysis (filled only when asked for).
struct AttentionRecord {
  torch::Tensor probs;               // (B,H,T,T) softmax probabilities, before dropout; a
                                     // query with no visible key has a row of zeros
  std::vector<torch::Tensor> terms;  // one per stacked encoding: its score term, (B|1,H,T,T),
                                     // undefined when the encoding adds nothing to the scores
  // One per stacked encoding: the content-only part of its term (content_part(), e.g.
  // Transformer-XL's u·k_j/√d, (B,H,1,T)), undefined when the whole term is positional.
  std::vector<torch::Tensor> content_parts;
};

class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  MultiHeadAttentionImpl(int64_t width, int64_t heads, double attention_dropout);

  // x (B,T,D) -> (B,T,D). key_mask (B,T) bool, true where a key may be attended (undefined:
  // every key). Causal masking follows ctx.causal. With a record, always the eager path (the
  // record needs the probabilities); else the fused one when set_fused(true).
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx,
                        const EncodingList& encodings, const torch::Tensor& key_mask = {},
                        AttentionRecord* record = nullptr);

  // q, k of x as the scores see them before any position hook: (B,H,T,d) each.
  std::pair<torch::Tensor, torch::Tensor> project_qk(const torch::Tensor& x);

  // The fused path (core/model/fused_attention.h) for forward passes that record nothing. Set
  // by the Transformer (model.attention_impl), which checks that its encodings allow it.
  void set_fused(bool on) { fused_ = on; }
  bool fused() const { return fused_; }

  int64_t heads() const { return heads_; }
  int64_t head_dim() const { return head_dim_; }

  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr}, output{nullptr};
  torch::nn::Dropout attention_dropout{nullptr};

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;  // (B,T,D) -> (B,H,T,d)
  int64_t width_, heads_, head_dim_;
  bool fused_ = false;
};
TORCH_MODULE(MultiHeadAttention);

// (T,T) bool, true where key j is visible from query i (j <= i when causal).
torch::Tensor visibility_mask(int64_t T, bool causal, torch::Device device);

}  // namespace relpos
