// A transformer with the head its task needs. Parameter paths (used for checkpoints, HDF5
// /weights and fine-tuning by name): transformer.*, lm_head.*, classifier_head.*, span_head.*.
#pragma once

#include "core/config/config.h"
#include "core/model/heads.h"
#include "core/model/transformer.h"
#include "core/task/task_registry.h"  // HeadKind

namespace relpos {

// The head is the one the task registry names for cfg.task.type.
class ModelImpl : public torch::nn::Module {
 public:
  ModelImpl(const Config& cfg, int64_t vocab_size);

  // The whole path from tokens to the head's logits, in one read:
  //   tokens (B,T) -> TransformerImpl::forward (embeddings + position encodings, the blocks,
  //   each with MultiHeadAttentionImpl::forward) -> hidden (B,T,D) -> the task's head:
  //   language model (B,T,V), classifier (B,C) pooled at pool_index (B), span (B,T,2).
  // The training loss of a batch is batch_loss() in core/train/objective.cpp (cross-entropy of
  // these logits at the batch's targets).
  torch::Tensor forward(const torch::Tensor& tokens, const ForwardOptions& opts = {},
                        const torch::Tensor& pool_index = {});

  // Hidden states (B,T,D).
  torch::Tensor hidden(const torch::Tensor& tokens, const ForwardOptions& opts = {});
  // Vocabulary logits (B,T,V) (Lm head).
  torch::Tensor lm_logits(const torch::Tensor& hidden);
  // Class logits (B,C) pooled at pool_index (B) (Classifier head).
  torch::Tensor class_logits(const torch::Tensor& hidden, const torch::Tensor& pool_index);
  // Start/end logits (B,T,2) (Span head).
  torch::Tensor span_logits(const torch::Tensor& hidden);

  HeadKind kind() const { return kind_; }

  Transformer transformer{nullptr};
  LmHead lm_head{nullptr};
  ClassifierHead classifier_head{nullptr};
  SpanHead span_head{nullptr};

 private:
  HeadKind kind_;
};
TORCH_MODULE(Model);

// Model(cfg, vocab) moved to `device`. A model too big for memory (an allocation that fails)
// is a ConfigError naming the sizes of the config, not the allocator's message alone.
Model build_model(const Config& cfg, int64_t vocab, torch::Device device);

}  // namespace relpos
