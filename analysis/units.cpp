#include "analysis/units.h"

#include <cmath>

#include "core/task/task_registry.h"

namespace relpos::analysis {
namespace {

// "valid_loss_sliding@128" -> "loss"; "test_accuracy" -> "accuracy".
std::string base_name(std::string m) {
  for (const char* p : {"valid_", "test_"})
    if (m.rfind(p, 0) == 0) m = m.substr(std::string(p).size());
  if (const auto at = m.find('@'); at != std::string::npos) m = m.substr(0, at);
  const std::string sliding = "_sliding";
  if (m.size() > sliding.size() && m.compare(m.size() - sliding.size(), sliding.size(), sliding) == 0)
    m = m.substr(0, m.size() - sliding.size());
  return m;
}

const TaskInfo* find_task(const std::string& task) { return TaskRegistry::get().find(task); }

}  // namespace

// Language models score windows of a tokenized stream: a loss per token (per byte).
bool is_lm_task(const std::string& task) {
  const TaskInfo* t = find_task(task);
  return t && t->fixed_length_rows && t->tokenized;
}

bool metric_in_percent(const std::string& metric, const std::string& task) {
  const TaskInfo* t = find_task(task);
  const MetricInfo* m = t ? t->metric(base_name(metric)) : nullptr;
  return m && m->unit == "%";
}

bool metric_split_outcomes(const std::string& metric, const std::string& task) {
  const TaskInfo* t = find_task(task);
  const MetricInfo* m = t ? t->metric(base_name(metric)) : nullptr;
  return m && m->split_outcomes;
}

std::string bits_name(const std::string& tokenizer) {
  return tokenizer == "bytes" ? "bits_per_byte" : "bits_per_token";
}

double nats_to_bits(double nats) { return nats / std::log(2.0); }

std::string metric_unit(const std::string& metric, const std::string& task,
                        const std::string& tokenizer) {
  const std::string m = base_name(metric);
  const std::string token = tokenizer == "bytes" ? "byte" : "token";
  const TaskInfo* t = find_task(task);
  if (m == "loss") {
    if (is_lm_task(task)) return "nats/" + token;
    // Tokenized examples (a sentence pair, a question and its context): one loss per example.
    if (t && t->tokenized) return "nats/example";
    return task.empty() ? "nats" : "nats/target";
  }
  if (m == "bits_per_byte") return "bits/byte";
  if (m == "bits_per_token") return "bits/token";
  if (m == "ppl") return "per " + token;
  if (m == "accuracy" || m == "seq_accuracy") return "0–1";
  if (m == "mcc") return "−1..1";
  if (m == "em" || m == "f1") {
    // The task's own word on it: span-QA scores in %, classification F1 in [0, 1].
    const MetricInfo* info = t ? t->metric(m) : nullptr;
    return !info ? "" : info->unit == "%" ? "%" : "0–1";
  }
  return "";
}

std::string with_unit(const std::string& header, const std::string& unit) {
  return unit.empty() ? header : header + " (" + unit + ")";
}

}  // namespace relpos::analysis
