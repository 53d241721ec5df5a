// The interface every position encoding implements: three hooks that attention calls without
// knowing which variant it talks to (docs/variants.md).
//
//   hook 1  embed(x, offset)            add to the token embeddings          (learned, sinusoidal)
//           embed_at(x, positions)      the same at per-sequence positions   (randomized_max)
//   hook 2  transform_qk(q, k, ctx)     rotate/transform queries and keys    (rope)
//   hook 3  score_term(content,q,k,ctx) a term added to the scores           (everything relative)
//           value_term(probs, ctx)      a term added to the attention output (shaw)
//
// Scores of one head: e = content + sum over stacked encodings of score_term, where
// content = q·k/√d. A variant that rescales or replaces the content score returns the change
// (e.g. (s - 1)·content), so every stacked term is computed from the same content and each
// encoding's term is its position contribution, recorded for analysis.
//
// Dimension letters: B batch, T tokens, D width, E embedding width, H heads, d head width,
// L layers, R distinct relative distances.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/position/position_registry.h"

namespace relpos {

struct AttentionContext {
  int64_t layer = 0;   // parameter set of this block (0 for every block when layers are shared)
  int64_t length = 0;  // T
  int64_t offset = 0;  // absolute position of the first token
  bool causal = false;
  // (B,T) int64 absolute position of every token when a training batch draws its own
  // (position.randomized_max); undefined: offset .. offset+T-1 in every row.
  torch::Tensor positions;
  // This layer's own query and key projections, x (B,N,D) -> (B,H,N,d) each, for an encoding
  // that projects position vectors with them (deberta share_projections). Set by attention.
  std::function<std::pair<torch::Tensor, torch::Tensor>(const torch::Tensor&)> project_qk;
  // (B,H,T,d) q/√d, the tensor the eager path's content matmul keeps for its backward (set by
  // attention; undefined on the fused path). Read it through scaled_query().
  torch::Tensor scaled_query;
  // Set by attention, for one call of score_term of an encoding that can_include_content():
  // the term returned is then the whole score, content q·k/√d included, and `content` is a
  // stand-in that gives its shape, dtype and device only.
  bool include_content = false;
};

// q/√d for a score term: the eager path's own tensor, so that a term keeping it for backward
// keeps no second copy (one (B,H,T,d) tensor per layer), else computed from q.
inline torch::Tensor scaled_query(const torch::Tensor& q, const AttentionContext& ctx) {
  if (ctx.scaled_query.defined()) return ctx.scaled_query;
  return q * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));  // (B,H,T,d)
}

// A position tensor exported for analysis and HDF5 (`position/<variant>/<name>`).
struct ExportedTensor {
  std::string name;
  torch::Tensor value;             // float32 on CPU
  std::vector<std::string> dims;   // one name per axis, e.g. {"layer", "distance", "channel"}
};

// A parameter as an ExportedTensor value: a float32 copy on the CPU, detached from the graph.
inline torch::Tensor exported_copy(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU, torch::kFloat32).clone();
}

struct ExportOptions {
  int64_t length = 128;  // T for tables computed for a length (sinusoidal)
  int64_t radius = 50;   // R: functions of the distance are evaluated on r in [-R, R]
};

// What attention's fused path (model.attention_impl, core/model/fused_attention.h) may do with an
// encoding's hooks 3. The fused kernel never materialises the content scores or the
// probabilities: it takes the scores' additive term as its mask.
enum class FusedScores {
  unsupported,   // score_term reads the content scores' values, or value_term adds a term
  bias,          // no score term, or one of positions only: (1,H,T,T), shared by the batch
  content_bias,  // a term of q or k (B,H,T,T) that reads content for its shape only
};

class PositionEncodingImpl : public torch::nn::Module {
 public:
  ~PositionEncodingImpl() override = default;

  // Registry name of this encoding.
  virtual std::string type() const = 0;

  // Hook 1. x (B,T,E) -> (B,T,E); positions are offset .. offset+T-1.
  virtual torch::Tensor embed(const torch::Tensor& x, int64_t /*offset*/) { return x; }
  // Hook 1 at given positions: x (B,T,E), positions (B,T) int64 -> (B,T,E). Overridden by the
  // variants registered with absolute_positions; the others add nothing here either.
  virtual torch::Tensor embed_at(const torch::Tensor& x, const torch::Tensor& /*positions*/) {
    return x;
  }

  // Hook 2. q, k (B,H,T,d), replaced by their transformed values.
  virtual void transform_qk(torch::Tensor& /*q*/, torch::Tensor& /*k*/,
                            const AttentionContext& /*ctx*/) {}

  // Hook 3. The term this encoding adds to the scores, (B,H,T,T) or broadcastable (1,H,T,T);
  // undefined for none. content = q·k/√d (B,H,T,T), before masking.
  virtual torch::Tensor score_term(const torch::Tensor& /*content*/, const torch::Tensor& /*q*/,
                                   const torch::Tensor& /*k*/, const AttentionContext& /*ctx*/) {
    return {};
  }

  // The part of score_term that depends on the tokens only, not on their positions
  // (Transformer-XL's global content bias u·k_j/√d), (B,H,1,T) or broadcastable to the term;
  // undefined when the whole term is positional. Snapshots record the term without it as the
  // encoding's position-only scores.
  virtual torch::Tensor content_part(const torch::Tensor& /*q*/, const torch::Tensor& /*k*/,
                                     const AttentionContext& /*ctx*/) {
    return {};
  }

  // Hook 3 (values). A term (B,H,T,d) added to sum_j probs_ij v_j; undefined for none.
  // probs (B,H,T,T) are the attention probabilities after masking and dropout.
  virtual torch::Tensor value_term(const torch::Tensor& /*probs*/,
                                   const AttentionContext& /*ctx*/) {
    return {};
  }

  // How the fused attention path may treat this encoding's hooks 3 (FusedScores above). The
  // default is the safe one: an encoding says `bias` or `content_bias` only when its
  // score_term reads no value of `content` (its shape, dtype and device only) and its
  // value_term adds nothing.
  virtual FusedScores fused_scores() const { return FusedScores::unsupported; }

  // Whether score_term can return content + its term from one product, for less than the two
  // apart (huang_m3's Σ_m q_im k_jm a_m is the content product at a = 1). Attention's eager path
  // then forms no content scores of its own (one (B,H,T,T) matmul forward and two backward per
  // layer) and sets ctx.include_content for this encoding's call, when every other encoding of
  // the stack reads content for its shape only (fused_scores() not unsupported) and no snapshot
  // is recorded (snapshots keep each term apart from content).
  virtual bool can_include_content() const { return false; }

  // Longest supported offset + T, or -1 for any length. Going past it is an error unless the
  // variant was configured to handle it (learned: beyond: clamp).
  virtual int64_t max_length() const { return -1; }
  // Rows of a trained table indexed by absolute position (learned: max_len), -1 for none,
  // whether or not positions past it are clamped. Rows past the training length never received
  // a gradient: evaluation past it needs to know.
  virtual int64_t table_length() const { return -1; }

  // Every learned or fixed position tensor, float32 on CPU.
  virtual std::vector<ExportedTensor> export_tensors(const ExportOptions& /*opts*/) {
    return {};
  }

  // Number of positional parameters (everything this module owns).
  int64_t parameter_count() const;
};

}  // namespace relpos
