#include "core/train/optim.h"

#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <cmath>

namespace relpos {

std::unique_ptr<torch::optim::AdamW> make_optimizer(torch::nn::Module& model,
                                                    const TrainConfig& cfg) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : model.named_parameters()) {
    const std::string& name = p.key();
    const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    const bool is_norm = name.find("norm") != std::string::npos;
    const bool is_position = name.find(".position.") != std::string::npos;
    (is_bias || is_norm || is_position ? no_decay : decay).push_back(p.value());
  }
  auto options = torch::optim::AdamWOptions(cfg.lr)
                     .betas({cfg.adam_beta1, cfg.adam_beta2})
                     .eps(cfg.adam_eps)
                     .weight_decay(cfg.weight_decay);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options));
  auto nd = options;
  nd.weight_decay(0.0);
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(nd));
  return std::make_unique<torch::optim::AdamW>(groups, options);
}

double learning_rate(const TrainConfig& cfg, int64_t step) {
  const double total = static_cast<double>(cfg.steps);
  const double warm = std::max(1.0, cfg.warmup * total);
  const double s = static_cast<double>(step);
  // Capped at lr: with a fractional W (warmup·steps = 1.5) the last warm-up step would pass it.
  if (s < warm) return cfg.lr * std::min(1.0, (s + 1.0) / warm);
  return cfg.lr * std::max(0.0, (total - s) / std::max(1.0, total - warm));
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups())
    static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

double clip_gradients(torch::nn::Module& model, double max_norm) {
  if (max_norm > 0) return torch::nn::utils::clip_grad_norm_(model.parameters(), max_norm);
  double sq = 0;
  for (const auto& p : model.parameters())
    if (p.grad().defined()) sq += p.grad().detach().to(torch::kDouble).pow(2).sum().item<double>();
  return std::sqrt(sq);
}

void record_evaluation(TrainState& state, double value, bool higher_is_better) {
  const bool better =
      !state.has_best || (higher_is_better ? value > state.best_metric : value < state.best_metric);
  if (better) {
    state.best_metric = value;
    state.has_best = true;
    state.evals_without_improvement = 0;
  } else {
    ++state.evals_without_improvement;
  }
}

bool early_stop_due(const TrainState& state, int64_t patience) {
  return patience > 0 && state.evals_without_improvement >= patience;
}

}  // namespace relpos
