#include "core/model/heads.h"

#include <torch/nn/functional/activation.h>

#include "core/model/dropout.h"
#include "core/model/transformer.h"

namespace relpos {

LmHeadImpl::LmHeadImpl(int64_t width, int64_t embed_dim, int64_t vocab_size, bool transform,
                       std::string activation_kind, double norm_eps)
    : transform_(transform), activation_(std::move(activation_kind)) {
  if (transform || width != embed_dim)
    dense = register_module("dense", torch::nn::Linear(width, embed_dim));
  if (transform) norm = register_module("norm", layer_norm(embed_dim, norm_eps));
  bias = register_parameter("bias", torch::zeros({vocab_size}));
}

torch::Tensor LmHeadImpl::forward(const torch::Tensor& hidden,
                                  const torch::Tensor& embedding_weight) {
  auto h = hidden;                                                   // (B,T,D)
  if (dense) h = dense(h);                                           // (B,T,E)
  if (transform_) h = apply_norm(norm, activation(h, activation_));  // (B,T,E)
  return torch::matmul(h, embedding_weight.t()) + bias;              // (B,T,V)
}

ClassifierHeadImpl::ClassifierHeadImpl(int64_t width, int64_t num_classes, double p) {
  pooler = register_module("pooler", torch::nn::Linear(width, width));
  classifier = register_module("classifier", torch::nn::Linear(width, num_classes));
  dropout = register_module("dropout", torch::nn::Dropout(p));
}

torch::Tensor ClassifierHeadImpl::forward(const torch::Tensor& hidden,
                                          const torch::Tensor& pool_index) {
  const int64_t B = hidden.size(0), D = hidden.size(2);
  auto idx = pool_index.view({B, 1, 1}).expand({B, 1, D});                   // (B,1,D)
  auto pooled = hidden.gather(1, idx).squeeze(1);                            // (B,D)
  return classifier(relpos::dropout(torch::tanh(pooler(pooled)), dropout));  // (B,C)
}

SpanHeadImpl::SpanHeadImpl(int64_t width) {
  span = register_module("span", torch::nn::Linear(width, 2));
}

torch::Tensor SpanHeadImpl::forward(const torch::Tensor& hidden) {
  return span(hidden);  // (B,T,2)
}

}  // namespace relpos
