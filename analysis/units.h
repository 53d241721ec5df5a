// The unit of every number relpos logs, for table headers (docs/analysis.md, "Units"), and bits
// beside every language-model loss: a loss in nats per token is loss / ln 2 bits per token, and
// with the byte tokenizer a token is a byte.
#pragma once

#include <string>

namespace relpos::analysis {

// Whether the task's loss is a language-model loss per token (mlm, clm).
bool is_lm_task(const std::string& task);

// The unit of a metric or evaluation column ("valid_loss", "loss_sliding", "accuracy@128",
// "bits_per_byte"): "nats/byte" or "nats/token" for an LM loss, "bits/byte", "per byte"
// (perplexity), "0–1" (accuracies, classification F1), "%" (span-QA EM and F1), "−1..1" (MCC),
// "nats/example", "nats/target"; "" when unknown. tokenizer: the run's data.tokenizer.
std::string metric_unit(const std::string& metric, const std::string& task,
                        const std::string& tokenizer);

// "header (unit)", or the header alone when the unit is empty.
std::string with_unit(const std::string& header, const std::string& unit);

// Whether the task reports `metric` ("valid_em", "f1", ...) in % (span-QA EM and F1), per the
// task registry.
bool metric_in_percent(const std::string& metric, const std::string& task);

// Whether `metric` ("valid_seq_accuracy@32", ...) is one whose runs split between seeds
// (MetricInfo::split_outcomes), so that pooled tables list every run's value.
bool metric_split_outcomes(const std::string& metric, const std::string& task);

// "bits_per_byte" (byte tokenizer) or "bits_per_token": the name of a loss given in bits.
std::string bits_name(const std::string& tokenizer);

double nats_to_bits(double nats);

}  // namespace relpos::analysis
