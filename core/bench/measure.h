// One `relpos bench` configuration, measured inside the process that runs it: the bench parent
// starts one child process per configuration (so that peak memory is that configuration's
// alone) and the child calls measure_step_time().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace relpos {

struct StepOptions {
  int64_t steps = 5;       // measured steps
  int64_t warmup = 2;      // steps run first and not measured
  int64_t vocab = 256;     // random tokens and targets in [0, vocab)
  bool optimizer = false;  // also take an AdamW step (a full training step)
  std::string profile;     // when set: one more step under the autograd profiler, chrome trace
  // When > 0: after the measured steps, the baseline model (position.type = the registry's
  // baseline, everything else the same) is built in the same process and this many rounds of one
  // step of each model are timed, alternating which goes first (ABBA), so that both see the
  // same machine speed: on a machine whose speed drifts between processes and over minutes,
  // the ratio of two processes' times can be off by 30%.
  int64_t paired = 0;
};

struct StepMeasurement {
  double step_ms_median = 0;  // wall time of forward+backward(+optimizer), median over steps
  double step_ms_min = 0;
  double step_ms_max = 0;
  double cpu_ms_median = 0;   // process CPU time per step (all threads), median
  double tokens_per_s = 0;    // B·T / median step time
  double loss = 0;            // the last step's loss (checked finite)
  double base_rss_mb = 0;     // resident memory with model and batch built, before the first step
  double peak_rss_mb = 0;     // VmHWM at the end (the parent also reads ru_maxrss)
  double tensor_base_mb = -1; // CPU tensors alive before the first step (model, batch); -1: not
                              // tracked (CUDA)
  double tensor_peak_mb = -1; // most CPU tensor memory alive at once during the steps
  double cuda_peak_mb = -1;   // peak bytes allocated by the CUDA caching allocator; -1 on CPU
  double cuda_reserved_mb = -1;
  int64_t parameters = 0;     // all model parameters
  int64_t position_parameters = 0;
  int torch_threads = 0;
  int blas_threads = -1;
  std::string device;
  std::string attention;      // the attention path the steps ran: fused | eager
  // StepOptions::paired: per round, the baseline's and this model's step time (ms); empty when
  // not asked for or when this model is the baseline.
  std::string paired_baseline;
  std::vector<double> paired_baseline_ms, paired_variant_ms;
};

// Builds the model of `cfg` (task head from cfg.task, T = cfg.task.seq_len, B =
// cfg.train.batch_size, device and threads from cfg) and times `opts.steps` MLM-like steps:
// random tokens, cross-entropy against random targets at every position, backward. Every
// memory figure is taken before the paired rounds (StepOptions::paired) build a second model.
StepMeasurement measure_step_time(const Config& cfg, const StepOptions& opts);

// Wall time of a 1024x1024x1024 float32 matmul on the CPU (median of `repeats`), as GFLOP/s.
double matmul_gflops(int64_t n = 1024, int repeats = 5);

// The median of `values` with NaNs left out (a configuration that did not report one); NaN when
// nothing is left.
double median(std::vector<double> values);

// Resident set size now and its high-water mark, from /proc/self/status (MB; 0 if unreadable).
double current_rss_mb();
double peak_rss_mb();

}  // namespace relpos
