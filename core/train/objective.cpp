#include "core/train/objective.h"

#include <torch/nn/functional/loss.h>

#include <cmath>
#include <limits>

#include "core/data/squad_metric.h"
#include "core/task/task_registry.h"

namespace relpos {

namespace F = torch::nn::functional;

Batch to_device(const Batch& b, torch::Device device) {
  Batch out = b;
  auto mv = [&](torch::Tensor& t) {
    if (t.defined()) t = t.to(device);
  };
  mv(out.tokens);
  mv(out.key_mask);
  mv(out.segments);
  mv(out.targets);
  mv(out.pool_index);
  mv(out.positions);
  return out;
}

namespace {

ForwardOptions forward_options(const Batch& b) {
  ForwardOptions o;
  o.segments = b.segments;
  o.key_mask = b.key_mask;
  o.positions = b.positions;
  return o;
}

// Start/end logits (B,T) each, padding masked out.
std::pair<torch::Tensor, torch::Tensor> span_logits(Model& model, const Batch& b) {
  auto logits = model->span_logits(model->hidden(b.tokens, forward_options(b)));  // (B,T,2)
  auto start = logits.select(-1, 0), end = logits.select(-1, 1);                  // (B,T)
  if (b.key_mask.defined()) {
    const float neg = -1e9f;
    start = start.masked_fill(b.key_mask.logical_not(), neg);
    end = end.masked_fill(b.key_mask.logical_not(), neg);
  }
  return {start, end};
}

TargetLogits target_rows(Model& model, const Batch& b) {
  return lm_logits_at_targets(model, model->hidden(b.tokens, forward_options(b)), b.targets);
}

}  // namespace

TargetLogits lm_logits_at_targets(Model& model, const torch::Tensor& hidden,
                                  const torch::Tensor& targets) {
  auto flat_targets = targets.reshape({-1});                   // (BT)
  auto index = flat_targets.ne(-100).nonzero().squeeze(1);     // (N)
  auto rows = hidden.reshape({-1, hidden.size(-1)}).index_select(0, index);  // (N,D)
  return {model->lm_logits(rows), flat_targets.index_select(0, index), index};
}

torch::Tensor batch_loss(Model& model, const Batch& b) {
  switch (model->kind()) {
    case HeadKind::Lm: {
      auto r = target_rows(model, b);  // no target at all: the mean over nothing is NaN, as before
      return F::cross_entropy(r.logits, r.targets);
    }
    case HeadKind::Classifier: {
      auto logits = model->class_logits(model->hidden(b.tokens, forward_options(b)),
                                        b.pool_index);  // (B,C)
      return F::cross_entropy(logits, b.targets);
    }
    case HeadKind::Span: {
      auto [start, end] = span_logits(model, b);  // (B,T) each
      return 0.5 * (F::cross_entropy(start, b.targets.select(1, 0)) +
                    F::cross_entropy(end, b.targets.select(1, 1)));
    }
  }
  return {};
}

std::vector<std::pair<int64_t, int64_t>> best_spans(const torch::Tensor& start,
                                                    const torch::Tensor& end,
                                                    const std::vector<TokenRange>& context,
                                                    int64_t max_len) {
  TORCH_CHECK(start.dim() == 2 && start.sizes() == end.sizes(),
              "best_spans: start and end logits of one shape (B,T) expected, got ", start.sizes(),
              " and ", end.sizes());
  const int64_t B = start.size(0), T = start.size(1);
  TORCH_CHECK(static_cast<int64_t>(context.size()) == B, "best_spans: ", context.size(),
              " context ranges for ", B, " rows");
  std::vector<int64_t> lo, hi;
  for (const TokenRange& r : context) {
    lo.push_back(r.begin);
    hi.push_back(r.end);
  }
  const auto device = start.device();
  auto pos = torch::arange(T, start.options().dtype(torch::kLong));       // (T)
  auto begin = torch::tensor(lo, torch::kLong).to(device).unsqueeze(1);   // (B,1)
  auto stop = torch::tensor(hi, torch::kLong).to(device).unsqueeze(1);    // (B,1)
  auto inside = (pos.unsqueeze(0) >= begin) & (pos.unsqueeze(0) < stop);  // (B,T)
  auto diff = pos.unsqueeze(0) - pos.unsqueeze(1);                        // (T,T) e - s
  auto allowed = ((diff >= 0) & (diff < max_len)).unsqueeze(0) & inside.unsqueeze(2) &
                 inside.unsqueeze(1);  // (B,T,T)
  auto scores = (start.unsqueeze(2) + end.unsqueeze(1))
                    .masked_fill(allowed.logical_not(),
                                 -std::numeric_limits<float>::infinity());  // (B,T,T)
  auto best = scores.reshape({B, T * T}).argmax(-1).to(torch::kCPU);        // (B)
  auto any = allowed.reshape({B, T * T}).any(-1).to(torch::kCPU);           // (B)
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < B; ++i) {
    const int64_t k = any[i].item<bool>() ? best[i].item<int64_t>() : 0;
    out.emplace_back(k / T, k % T);
  }
  return out;
}

int64_t loss_items(Model& model, const Batch& b) {
  if (model->kind() == HeadKind::Lm) return b.targets.ne(-100).sum().item<int64_t>();
  return b.targets.size(0);
}

MetricAccumulator::MetricAccumulator(const std::string& task, const TaskData* data, Split split)
    : data_(data), split_(split) {
  if (const TaskInfo* info = TaskRegistry::get().find(task)) {
    perplexity_ = info->metric("ppl") != nullptr;
    sequence_accuracy_ = info->metric("seq_accuracy") != nullptr;
  }
}

void MetricAccumulator::add(Model& model, const Batch& b) {
  torch::NoGradGuard guard;
  switch (model->kind()) {
    case HeadKind::Lm: {
      auto r = target_rows(model, b);  // (N,V), (N)
      const double n = static_cast<double>(r.targets.size(0));
      if (n == 0) return;
      add_losses(F::cross_entropy(r.logits, r.targets,
                                  F::CrossEntropyFuncOptions().reduction(torch::kNone)));  // (N)
      auto right_rows = r.logits.argmax(-1) == r.targets;  // (N)
      correct_ += right_rows.sum().item<double>();
      total_ += n;
      if (sequence_accuracy_) {
        // A position without a target never makes its sequence wrong.
        auto right = torch::ones({b.targets.numel()}, r.targets.options().dtype(torch::kBool))
                         .index_put_({r.index}, right_rows);                    // (BT)
        auto rows = right.view(b.targets.sizes()).all(1).to(torch::kCPU);     // (B)
        for (int64_t i = 0; i < rows.size(0); ++i) {
          const bool ok = rows[i].item<bool>();
          seq_correct_ += ok;
          seq_total_ += 1;
          if (i < static_cast<int64_t>(b.lengths.size())) {
            auto& slot = by_length_[b.lengths[i]];
            slot.first += ok;
            slot.second += 1;
          }
        }
      }
      break;
    }
    case HeadKind::Classifier: {
      auto logits = model->class_logits(model->hidden(b.tokens, forward_options(b)),
                                        b.pool_index);  // (B,C)
      add_losses(F::cross_entropy(logits, b.targets,
                                  F::CrossEntropyFuncOptions().reduction(torch::kNone)));  // (B)
      auto predicted = logits.argmax(-1);  // (B)
      correct_ += (predicted == b.targets).sum().item<double>();
      total_ += b.targets.size(0);
      if (confusion_.classes() == 0) confusion_ = ConfusionMatrix(logits.size(1));
      TORCH_CHECK(confusion_.classes() == logits.size(1), "classifier metrics: ", logits.size(1),
                  " classes after ", confusion_.classes(), " in an earlier batch");
      auto gold = b.targets.to(torch::kCPU).contiguous();  // (B)
      predicted = predicted.to(torch::kCPU).contiguous();  // (B)
      const auto g = gold.accessor<int64_t, 1>(), p = predicted.accessor<int64_t, 1>();
      for (int64_t i = 0; i < g.size(0); ++i) confusion_.add(g[i], p[i]);
      break;
    }
    case HeadKind::Span: {
      auto [start, end] = span_logits(model, b);  // (B,T)
      const int64_t B = start.size(0);
      const auto none = F::CrossEntropyFuncOptions().reduction(torch::kNone);
      add_losses(0.5 * (F::cross_entropy(start, b.targets.select(1, 0), none) +
                        F::cross_entropy(end, b.targets.select(1, 1), none)));  // (B)
      const int64_t max_len = data_ ? data_->max_answer_len() : TaskConfig{}.max_answer_len;
      const auto best = best_spans(start, end, b.context_range, max_len);
      auto gold = b.targets.to(torch::kCPU);
      for (int64_t i = 0; i < B; ++i) {
        const auto [s, e] = best[i];
        correct_ += (s == gold[i][0].item<int64_t>() && e == gold[i][1].item<int64_t>());
        total_ += 1;
        if (data_ && i < static_cast<int64_t>(b.example_ids.size())) {
          const std::string pred =
              data_->span_text(split_, b.example_ids[i], s, e, b.context_range[i]);
          const auto answers = data_->gold_answers(split_, b.example_ids[i]);
          em_sum_ += squad_exact_match(pred, answers);
          const double f1 = squad_f1(pred, answers);
          f1_sum_ += f1;
          f1_sq_sum_ += f1 * f1;
          qa_count_ += 1;
        }
      }
      break;
    }
  }
}

void MetricAccumulator::add_losses(const torch::Tensor& losses) {
  const auto l = losses.to(torch::kFloat64);  // (N)
  loss_sum_ += l.sum().item<double>();
  loss_sq_sum_ += l.square().sum().item<double>();
  loss_count_ += static_cast<double>(l.numel());
}

namespace {

// The sample standard deviation of items from their sum and sum of squares; NaN for n < 2.
double sd_of_sums(double sum, double sq_sum, double n) {
  if (n < 2) return std::nan("");
  const double var = (sq_sum - sum * sum / n) / (n - 1);
  return std::sqrt(std::max(var, 0.0));
}

}  // namespace

std::map<std::string, double> MetricAccumulator::result() const {
  std::map<std::string, double> m;
  // What sets each metric's sampling error over the evaluation set (is_sampling_statistic):
  // the items scored and the per-item spread of the loss and of the QA F1.
  if (loss_count_ > 0) {
    m["loss"] = loss_sum_ / loss_count_;
    m["items"] = total_ > 0 ? total_ : loss_count_;
    const double sd = sd_of_sums(loss_sum_, loss_sq_sum_, loss_count_);
    if (std::isfinite(sd)) m["loss_sd"] = sd;
  }
  if (seq_total_ > 0) m["seq_items"] = seq_total_;
  for (const auto& [len, counts] : by_length_) m["seq_items@" + std::to_string(len)] = counts.second;
  if (qa_count_ > 1)
    m["f1_sd"] = 100.0 * sd_of_sums(f1_sum_, f1_sq_sum_, qa_count_);
  if (total_ > 0) m["accuracy"] = correct_ / total_;
  if (perplexity_ && loss_count_ > 0) m["ppl"] = std::exp(loss_sum_ / loss_count_);
  if (seq_total_ > 0) m["seq_accuracy"] = seq_correct_ / seq_total_;
  for (const auto& [len, counts] : by_length_)
    m["seq_accuracy@" + std::to_string(len)] = counts.first / counts.second;
  if (confusion_.total() > 0) {
    m["f1"] = classification_f1(confusion_);
    m["mcc"] = matthews_correlation(confusion_);
  }
  if (qa_count_ > 0) {
    m["em"] = 100.0 * em_sum_ / qa_count_;
    m["f1"] = 100.0 * f1_sum_ / qa_count_;
  }
  return m;
}

std::map<std::string, double> evaluate(Model& model, const TaskData& data,
                                       const std::string& task, Split split,
                                       const std::vector<Batch>& batches, torch::Device device) {
  const bool was_training = model->is_training();
  model->eval();
  MetricAccumulator metrics(task, &data, split);
  for (const auto& b : batches) metrics.add(model, to_device(b, device));
  if (was_training) model->train();
  return metrics.result();
}

}  // namespace relpos
