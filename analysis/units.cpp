#include "analysis/units.h"

#include <cmath>

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

}  // namespace

bool is_lm_task(const std::string& task) { return task == "mlm" || task == "clm"; }

std::string bits_name(const std::string& tokenizer) {
  return tokenizer == "bytes" ? "bits_per_byte" : "bits_per_token";
}

double nats_to_bits(double nats) { return nats / std::log(2.0); }

std::string metric_unit(const std::string& metric, const std::string& task,
                        const std::string& tokenizer) {
  const std::string m = base_name(metric);
  const std::string token = tokenizer == "bytes" ? "byte" : "token";
  if (m == "loss") {
    if (is_lm_task(task)) return "nats/" + token;
    if (task == "classify" || task == "span_qa") return "nats/example";
    return task.empty() ? "nats" : "nats/target";
  }
  if (m == "bits_per_byte") return "bits/byte";
  if (m == "bits_per_token") return "bits/token";
  if (m == "ppl") return "per " + token;
  if (m == "accuracy" || m == "seq_accuracy") return "0–1";
  if (m == "mcc") return "−1..1";
  if (m == "em") return task == "span_qa" ? "%" : "";
  if (m == "f1") return task == "span_qa" ? "%" : task == "classify" ? "0–1" : "";
  return "";
}

std::string with_unit(const std::string& header, const std::string& unit) {
  return unit.empty() ? header : header + " (" + unit + ")";
}

}  // namespace relpos::analysis
