// AdamW with BERT's parameter groups and a linear warm-up / linear decay schedule.
#pragma once

#include <torch/optim/adamw.h>

#include <memory>

#include "core/config/config.h"

namespace relpos {

// Biases, LayerNorm weights and position parameters get no weight decay; the rest do.
std::unique_ptr<torch::optim::AdamW> make_optimizer(torch::nn::Module& model, const TrainConfig& cfg);

// Learning rate after `step` completed steps: linear warm-up over warmup·steps, then linear
// decay to 0 at `steps`.
double learning_rate(const TrainConfig& cfg, int64_t step);

void set_learning_rate(torch::optim::Optimizer& opt, double lr);

}  // namespace relpos
