// relpos bench: step time and peak memory of position variants across lengths (issue 6).
// Every configuration runs in a child process (this executable, `bench --child`), whose peak
// RSS the parent reads with wait4(); see core/bench/bench.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>

#include "analysis/inference.h"
#include "app/bench_args.h"
#include "app/commands.h"
#include "core/bench/bench_session.h"
#include "core/model/fused_attention.h"

namespace relpos::app {
namespace {

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
