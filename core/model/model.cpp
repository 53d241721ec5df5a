#include "core/model/model.h"

namespace relpos {

HeadKind head_kind(const std::string& task) {
  if (task == "classify") return HeadKind::Classifier;
  if (task == "span_qa") return HeadKind::Span;
  return HeadKind::Lm;
}

ModelImpl::ModelImpl(const Config& cfg, int64_t vocab_size) : kind_(head_kind(cfg.task.type)) {
  const ModelConfig& m = cfg.model;
  transformer = register_module("transformer", Transformer(m, cfg.position, vocab_size));
  switch (kind_) {
    case HeadKind::Lm:
      lm_head = register_module(
          "lm_head", LmHead(m.width, m.embed_dim(), vocab_size, /*transform=*/!m.causal()));
      init_weights(*lm_head, m.init_std);
      break;
    case HeadKind::Classifier:
      classifier_head =
          register_module("classifier_head", ClassifierHead(m.width, cfg.task.num_classes, m.dropout));
      init_weights(*classifier_head, m.init_std);
      break;
    case HeadKind::Span:
      span_head = register_module("span_head", SpanHead(m.width));
      init_weights(*span_head, m.init_std);
      break;
  }
}

torch::Tensor ModelImpl::hidden(const torch::Tensor& tokens, const ForwardOptions& opts) {
  return transformer->forward(tokens, opts);  // (B,T,D)
}

torch::Tensor ModelImpl::lm_logits(const torch::Tensor& hidden) {
  TORCH_CHECK(lm_head, "this model has no language-model head");
  return lm_head->forward(hidden, transformer->token_embedding->weight);  // (B,T,V)
}

torch::Tensor ModelImpl::class_logits(const torch::Tensor& hidden, const torch::Tensor& pool_index) {
  TORCH_CHECK(classifier_head, "this model has no classification head");
  return classifier_head->forward(hidden, pool_index);  // (B,C)
}

torch::Tensor ModelImpl::span_logits(const torch::Tensor& hidden) {
  TORCH_CHECK(span_head, "this model has no span head");
  return span_head->forward(hidden);  // (B,T,2)
}

}  // namespace relpos
