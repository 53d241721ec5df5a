#include "app/bench_args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace relpos::app {

void BenchArgs::parse_lists() {
  const std::string hint = "relpos bench --help lists the options and their values";
  variants = list_items("--variants", variants_text, hint);
  check_unique(variants, "bench: --variants", "variant");
  if (!lengths_text.empty()) lengths = integer_items("--lengths", lengths_text, hint);
  check_unique(lengths, "bench: --lengths", "length");
  if (!attention_text.empty()) attention = list_items("--attention", attention_text, hint);
  check_unique(attention, "bench: --attention", "attention path");
}

std::vector<std::string> BenchArgs::config_sets() const {
  std::vector<std::string> sets = config.sets;
  if (batch > 0) sets.push_back("train.batch_size=" + std::to_string(batch));
  if (threads >= 0) sets.push_back("threads=" + std::to_string(threads));
  if (!device.empty()) sets.push_back("device=" + device);
  return sets;
}

std::string BenchArgs::command_line() const {
  std::string s = "relpos bench";
  if (!variants.empty()) s += fmt::format(" --variants {}", fmt::join(variants, ","));
  s += fmt::format(" --lengths {} --direct {}", fmt::join(lengths, ","), direct);
  if (batch > 0) s += fmt::format(" --batch {}", batch);
  s += fmt::format(" --steps {} --warmup {}", step.steps, step.warmup);
  if (threads >= 0) s += fmt::format(" --threads {}", threads);
  if (!device.empty()) s += " --device " + device;
  if (!attention.empty()) s += fmt::format(" --attention {}", fmt::join(attention, ","));
  if (repeats != 1) s += fmt::format(" --repeat {}", repeats);
  if (step.paired > 0) s += fmt::format(" --paired {}", step.paired);
  if (step.vocab != 256) s += fmt::format(" --vocab {}", step.vocab);
  if (step.optimizer) s += " --optimizer";
  for (const auto& f : config.configs) s += " --config " + f;
  for (const auto& o : config.sets) s += " --set " + o;
  if (!json.empty()) s += " --json " + json;
  return s;
}

BenchRequest BenchArgs::request() const {
  BenchRequest r;
  r.configs = config.configs;
  r.sets = config_sets();
  r.variants = variants;
  r.lengths = lengths;
  r.direct = direct;
  r.attention = attention;
  r.step = step;
  r.repeats = repeats;
  r.timeout_s = timeout_s;
  r.max_memory_mb = max_memory_mb;
  r.json = json;
  r.command_line = command_line();
  return r;
}

}  // namespace relpos::app
