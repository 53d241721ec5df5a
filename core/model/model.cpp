#include "core/model/model.h"

#include <fmt/format.h>

#include <new>

#include "core/util/errors.h"

namespace relpos {

ModelImpl::ModelImpl(const Config& cfg, int64_t vocab_size)
    : kind_(task_info(cfg.task.type).head) {
  const ModelConfig& m = cfg.model;
  transformer = register_module("transformer", Transformer(m, cfg.position, vocab_size));
  switch (kind_) {
    case HeadKind::Lm:
      lm_head = register_module("lm_head", LmHead(m.width, m.embed_dim(), vocab_size,
                                                  /*transform=*/!m.causal(), m.activation,
                                                  m.norm_eps));
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

torch::Tensor ModelImpl::forward(const torch::Tensor& tokens, const ForwardOptions& opts,
                                 const torch::Tensor& pool_index) {
  const torch::Tensor h = hidden(tokens, opts);  // (B,T,D)
  switch (kind_) {
    case HeadKind::Lm:
      return lm_logits(h);  // (B,T,V)
    case HeadKind::Classifier:
      TORCH_CHECK(pool_index.defined(), "a classifier's forward needs pool_index (B)");
      return class_logits(h, pool_index);  // (B,C)
    case HeadKind::Span:
      return span_logits(h);  // (B,T,2)
  }
  return {};
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

Model build_model(const Config& cfg, int64_t vocab, torch::Device device) {
  auto fail = [&](const std::string& why) {
    const ModelConfig& m = cfg.model;
    return ConfigError(
        fmt::format("the model does not fit in memory (model.layers {}, model.width {}, "
                    "model.ff_width {}, model.embedding_width {}, vocabulary {}, on {}): {}",
                    m.layers, m.width, m.ff_width, m.embedding_width, vocab, device.str(), why),
        "a smaller model.width, model.ff_width or model.layers, or a smaller vocabulary");
  };
  try {
    Model model(cfg, vocab);
    model->to(device);
    return model;
  } catch (const c10::Error& e) {
    throw fail(e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    throw fail("out of memory (std::bad_alloc)");
  }
}

}  // namespace relpos
