// AdamW with BERT's parameter groups, a linear warm-up / linear decay schedule, gradient
// clipping by the global norm, and early stopping (docs/training.md).
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include <memory>

#include "core/config/config.h"
#include "core/io/checkpoint.h"  // TrainState

namespace relpos {

// Biases, LayerNorm weights and position parameters get no weight decay; the rest do.
std::unique_ptr<torch::optim::AdamW> make_optimizer(torch::nn::Module& model, const TrainConfig& cfg);

// Learning rate for the optimizer step that follows `step` completed steps (0-based): with
// W = max(1, warmup·steps), lr·min(1, (step+1)/W) while step < W (linear warm-up), then
// lr·max(0, (steps − step)/max(1, steps − W)) (linear decay to 0 at `steps`).
double learning_rate(const TrainConfig& cfg, int64_t step);

void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// The global L2 norm of the model's gradients, √(Σ_p ‖∇p‖²), before clipping. With
// max_norm > 0 and a norm above it, every gradient is scaled by max_norm / norm (LibTorch's
// clip_grad_norm_, which adds 1e-6 to the norm), so the global norm becomes max_norm; gradients
// under the limit, and all of them with max_norm = 0, are left as they are. A non-finite
// gradient gives a non-finite norm (the trainer's check).
double clip_gradients(torch::nn::Module& model, double max_norm);

// Early stopping (train.early_stop), one evaluation of the primary validation metric at a time:
// a value strictly better than state.best_metric (or the first one) becomes the best and resets
// state.evals_without_improvement to 0; any other value, a tie included, adds 1 to it.
void record_evaluation(TrainState& state, double value, bool higher_is_better);
// Whether `patience` (> 0; 0 = off) evaluations in a row have not improved the best value.
bool early_stop_due(const TrainState& state, int64_t patience);

}  // namespace relpos
