// Task heads on top of the transformer's hidden states (B,T,D).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace relpos {

// Vocabulary logits tied to the token embeddings (V,E). With `transform` (MLM, as in BERT):
// dense D->E, GELU (model.activation), LayerNorm (model.norm_eps) first; without it a plain
// D->E projection when E != D.
class LmHeadImpl : public torch::nn::Module {
 public:
  LmHeadImpl(int64_t width, int64_t embed_dim, int64_t vocab_size, bool transform,
             std::string activation = "gelu", double norm_eps = 1e-5);
  // hidden (B,T,D), embedding weight (V,E) -> logits (B,T,V).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& embedding_weight);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::Tensor bias;  // (V)

 private:
  bool transform_;
  std::string activation_;
};
TORCH_MODULE(LmHead);

// Sequence classification from one pooled position: tanh(dense(h)) -> dropout -> classes.
class ClassifierHeadImpl : public torch::nn::Module {
 public:
  ClassifierHeadImpl(int64_t width, int64_t num_classes, double dropout);
  // hidden (B,T,D), pooled index per sequence (B) -> logits (B,C).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& pool_index);

  torch::nn::Linear pooler{nullptr}, classifier{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(ClassifierHead);

// Span extraction: start and end logits per token.
class SpanHeadImpl : public torch::nn::Module {
 public:
  explicit SpanHeadImpl(int64_t width);
  // hidden (B,T,D) -> (B,T,2): [...,0] start logits, [...,1] end logits.
  torch::Tensor forward(const torch::Tensor& hidden);

  torch::nn::Linear span{nullptr};
};
TORCH_MODULE(SpanHead);

}  // namespace relpos
