// relpos bench: step time and peak memory of position variants across lengths (issue 6).
// Every configuration runs in a child process (this executable, `bench --child`), whose peak
// RSS the parent reads with wait4(); see core/bench/bench.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>

#include "analysis/inference.h"
#include "app/commands.h"
#include "core/bench/bench_session.h"
#include "core/model/fused_attention.h"

namespace relpos::app {
namespace {

struct BenchArgs {
  ConfigArgs config;
  std::vector<std::string> variants;
  std::vector<int64_t> lengths = {128, 512, 1024};
  std::vector<std::string> variants_text, lengths_text;  // as given: split by parse_lists()
  std::string direct = "auto";
  std::vector<std::string> attention_text, attention;  // --attention: model.attention_impl values
  int64_t batch = 0, threads = -1;
  std::string device;
  StepOptions step;
  int repeats = 1;
  int timeout_s = 1800;
  double max_memory_mb = -1;  // -1: 3/4 of physical memory
  std::string json;
  bool blas = false;
  bool child = false;

  // --variants and --lengths from their text: an empty item is an error, and so is an item
  // listed twice (it would be measured twice).
  void parse_lists() {
    const std::string hint = "relpos bench --help lists the options and their values";
    variants = list_items("--variants", variants_text, hint);
    check_unique(variants, "bench: --variants", "variant");
    if (!lengths_text.empty()) lengths = integer_items("--lengths", lengths_text, hint);
    check_unique(lengths, "bench: --lengths", "length");
    if (!attention_text.empty()) attention = list_items("--attention", attention_text, hint);
    check_unique(attention, "bench: --attention", "attention path");
  }
  // The config files and --set overrides every child gets (batch, threads, device included).
  std::vector<std::string> config_sets() const {
    std::vector<std::string> sets = config.sets;
    if (batch > 0) sets.push_back("train.batch_size=" + std::to_string(batch));
    if (threads >= 0) sets.push_back("threads=" + std::to_string(threads));
    if (!device.empty()) sets.push_back("device=" + device);
    return sets;
  }
  // The options as a command line (for the report), defaults included.
  std::string command_line() const {
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
  BenchRequest request() const {
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
};

// --paired: each case's ratio to `none` from its paired rounds, as the geometric mean with the
// 95% t-interval of the mean log ratio (rounds pooled over repeats), exponentiated.
void add_paired_intervals(std::vector<CaseSummary>& cases) {
  for (auto& c : cases) {
    if (c.paired_log_ratios.size() < 2) continue;
    const analysis::MeanCI ci = analysis::mean_ci(c.paired_log_ratios);
    c.paired_ratio = std::exp(ci.mean);
    c.paired_lo = std::exp(ci.lo);
    c.paired_hi = std::exp(ci.hi);
  }
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "time forward+backward steps and peak memory of position variants across lengths");
  auto a = std::make_shared<BenchArgs>();
  a->config.add_to(cmd, "configs/base.yaml then configs/bench.yaml, the bench model; a --config "
                        "replaces both");
  cmd->add_option("--variants", a->variants_text,
                  "variants to measure, comma-separated (default: every registered one)");
  cmd->add_option("--lengths", a->lengths_text,
                  fmt::format("sequence lengths T, comma-separated (default: {})",
                              fmt::join(a->lengths, ",")));
  cmd->add_option("--direct", a->direct,
                  "variants also measured on the direct [T,T,d] path: auto, none or a list")
      ->capture_default_str();
  cmd->add_option("--attention", a->attention_text,
                  "model.attention_impl values to measure every case with, comma-separated: "
                  "auto, eager, fused (default: the config's, auto)");
  cmd->add_option("--batch", a->batch, "batch size (default: train.batch_size, 8 in bench.yaml)")
      ->check(integer_in(1));
  cmd->add_option("--steps", a->step.steps, "measured steps per configuration")
      ->capture_default_str()
      ->check(integer_in(1));
  cmd->add_option("--warmup", a->step.warmup, "unmeasured steps first")
      ->capture_default_str()
      ->check(integer_in(0));
  cmd->add_option("--threads", a->threads, "intra-op threads (default: config `threads`, 0 = auto)")
      ->check(integer_in(0));
  cmd->add_option("--device", a->device, "cpu | cuda | cuda:N (default: config `device`)")
      ->check(non_empty("cpu, cuda or cuda:N"));  // "" used to mean "not given"
  cmd->add_option("--repeat", a->repeats, "run every configuration this many times, interleaved")
      ->capture_default_str()
      ->check(integer_in(1, 1000));
  cmd->add_option("--paired", a->step.paired,
                  "also time every variant against none in its own process: this many rounds of "
                  "one step of each, alternating which goes first; the table's `paired` column is "
                  "the geometric mean ratio with its 95% interval (default: off)")
      ->check(integer_in(2, 1000));
  cmd->add_option("--timeout", a->timeout_s, "seconds per configuration before it is stopped")
      ->capture_default_str()
      ->check(integer_in(1));
  cmd->add_option("--max-memory", a->max_memory_mb,
                  fmt::format("address-space limit per configuration in MB: 0 = none, else at "
                              "least {:.0f}, as LibTorch needs that much to start well (default "
                              "3/4 of RAM)",
                              kMinBenchMaxMemoryMb))
      ->check(number_at_least(0));
  cmd->add_option("--vocab", a->step.vocab, "vocabulary of the random tokens")
      ->capture_default_str()
      ->check(integer_in(2));
  cmd->add_flag("--optimizer", a->step.optimizer, "include an AdamW step (a full training step)");
  cmd->add_option("--json", a->json, "write the results as JSON to this file");
  cmd->add_flag("--blas", a->blas, "only report the BLAS in use and its 1024x1024 matmul GFLOP/s");
  cmd->add_option("--profile", a->step.profile,
                  "with --child: write a chrome trace of one extra step to this file")
      ->group("");
  cmd->add_flag("--child", a->child, "measure one configuration (internal)")->group("");
  return {cmd, [a]() {
    a->parse_lists();
    const BenchRequest request = a->request();
    if (a->child) return run_bench_child(request);
    if (a->blas) {
      std::cout << blas_summary(request.load().config) << "\n"
                << "attention: " << fused_attention_status() << "\n";
      return 0;
    }
    return run_bench_parent(request, add_paired_intervals);
  }};
}

}  // namespace relpos::app
