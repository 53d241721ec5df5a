#include "core/bench/measure.h"

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <limits>
#include <vector>

#include "core/bench/tensor_memory.h"
#include "core/model/model.h"
#include "core/position/position_registry.h"
#include "core/util/cpu_block_cache.h"
#include "core/util/errors.h"
#include "core/util/precision.h"
#include "core/util/threads.h"

#ifdef RELPOS_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace relpos {
namespace {

double status_field_mb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size())) / 1024.0;  // kB
  return 0;
}

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Waits for queued device work, so that the clock measures it (no-op on the CPU).
void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

double current_rss_mb() { return status_field_mb("VmRSS"); }
double peak_rss_mb() { return status_field_mb("VmHWM"); }

namespace {

// A model on the device in training mode, with its optimizer when asked for.
struct Trainee {
  Model model;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

// The steps of one bench configuration: random tokens and targets of (B,T), the measured model,
// and (StepOptions::paired) the baseline timed against it.
class StepBench {
 public:
  StepBench(const Config& cfg, const StepOptions& opts)
      : cfg_(cfg), opts_(opts), device_(cfg.device) {}

  // The batch, drawn after the measured model's initialisation (from the same seed).
  void draw_batch() {
    const int64_t B = cfg_.train.batch_size, T = cfg_.task.seq_len;
    auto long_opts = torch::TensorOptions().dtype(torch::kLong).device(device_);
    tokens_ = torch::randint(opts_.vocab, {B, T}, long_opts);   // (B,T)
    targets_ = torch::randint(opts_.vocab, {B, T}, long_opts);  // (B,T)
  }

  Trainee make_trainee(const Config& c) const {
    Trainee t{Model(c, opts_.vocab), nullptr};
    if (t.model->kind() != HeadKind::Lm)
      throw ConfigError("bench: task.type '" + c.task.type +
                        "' has no language-model head (expected mlm, clm or a synthetic task)");
    t.model->to(device_);
    t.model->train();
    if (opts_.optimizer)
      t.optimizer = std::make_unique<torch::optim::AdamW>(t.model->parameters(),
                                                          torch::optim::AdamWOptions(c.train.lr));
    return t;
  }

  // One forward+backward(+optimizer) step; the loss is kept for the finiteness check.
  void step(Trainee& t) {
    const int64_t B = tokens_.size(0), T = tokens_.size(1), V = opts_.vocab;
    t.model->zero_grad(/*set_to_none=*/true);
    {
      const PrecisionScope precision(cfg_.precision, device_);
      auto logits = t.model->lm_logits(t.model->hidden(tokens_));  // (B,T,V)
      loss_ = torch::nn::functional::cross_entropy(logits.view({B * T, V}), targets_.view({B * T}));
    }
    loss_.backward();
    if (t.optimizer) t.optimizer->step();
  }

  // Wall and CPU milliseconds of one step.
  std::pair<double, double> timed_step(Trainee& t) {
    sync(device_);
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = process_cpu_ms();
    step(t);
    sync(device_);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return {ms, process_cpu_ms() - c0};
  }

  // Warm-up, then the measured steps (and the profiled one): medians, extremes, tokens/s, loss.
  void measure(Trainee& t, StepMeasurement& m) {
    std::vector<double> wall, cpu;
    for (int64_t s = 0; s < opts_.warmup + opts_.steps; ++s) {
      const auto [ms, cpu_ms] = timed_step(t);
      if (s >= opts_.warmup) {
        wall.push_back(ms);
        cpu.push_back(cpu_ms);
      }
    }
    if (!opts_.profile.empty()) {
      torch::autograd::profiler::RecordProfile guard(opts_.profile);
      step(t);
      sync(device_);
    }
    m.loss = loss_.item<double>();
    if (!std::isfinite(m.loss))
      throw RunError("bench: the loss is not finite (" + std::to_string(m.loss) + ")");
    m.step_ms_median = median(wall);
    m.step_ms_min = *std::min_element(wall.begin(), wall.end());
    m.step_ms_max = *std::max_element(wall.begin(), wall.end());
    m.cpu_ms_median = median(cpu);
    m.tokens_per_s = static_cast<double>(tokens_.numel()) / (m.step_ms_median * 1e-3);
  }

  // StepOptions::paired: the baseline variant built beside the measured model, and rounds of one
  // step of each, alternating which goes first (ABBA), so a steady drift cancels in pairs.
  void measure_paired(Trainee& measured, StepMeasurement& m) {
    const std::string baseline = Registry::get().baseline();
    if (opts_.paired <= 0 || cfg_.position.types == std::vector<std::string>{baseline}) return;
    Config base_cfg = cfg_;
    base_cfg.position.types = {baseline};
    torch::manual_seed(static_cast<uint64_t>(cfg_.seed));
    Trainee base = make_trainee(base_cfg);
    for (int64_t s = 0; s < std::max<int64_t>(opts_.warmup, 1); ++s) step(base);
    m.paired_baseline = baseline;
    for (int64_t r = 0; r < opts_.paired; ++r) {
      const bool base_first = r % 2 == 0;
      const double first = timed_step(base_first ? base : measured).first;
      const double second = timed_step(base_first ? measured : base).first;
      m.paired_baseline_ms.push_back(base_first ? first : second);
      m.paired_variant_ms.push_back(base_first ? second : first);
    }
    if (!std::isfinite(loss_.item<double>()))
      throw RunError("bench: a paired step's loss is not finite");
  }

  const torch::Device& device() const { return device_; }

 private:
  const Config& cfg_;
  const StepOptions& opts_;
  torch::Device device_;
  torch::Tensor tokens_, targets_, loss_;
};

constexpr double kMiB = 1024.0 * 1024.0;

// The model's facts and the memory before the first step (the peaks are reset here).
void record_before_steps(const Trainee& t, const torch::Device& device, StepMeasurement& m) {
  m.device = device.str();
  m.attention = t.model->transformer->attention_path();
  for (const auto& p : t.model->parameters()) m.parameters += p.numel();
  for (const auto& p : t.model->transformer->position->parameters())
    m.position_parameters += p.numel();
  m.base_rss_mb = current_rss_mb();
  if (!device.is_cuda()) {
    m.tensor_base_mb = static_cast<double>(cpu_tensor_bytes()) / kMiB;
    reset_cpu_tensor_peak();
  }
#ifdef RELPOS_WITH_CUDA
  if (device.is_cuda())
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#endif
}

// The peaks of the measured steps: resident memory, CPU tensors, the CUDA caching allocator.
void record_peaks(const torch::Device& device, StepMeasurement& m) {
  m.peak_rss_mb = peak_rss_mb();
  if (!device.is_cuda()) m.tensor_peak_mb = static_cast<double>(cpu_tensor_peak_bytes()) / kMiB;
#ifdef RELPOS_WITH_CUDA
  if (device.is_cuda()) {
    // Index 0 of each stat array is the aggregate over pool types in every LibTorch version.
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(
        device.index() < 0 ? 0 : device.index());
    m.cuda_peak_mb = static_cast<double>(stats.allocated_bytes[0].peak) / kMiB;
    m.cuda_reserved_mb = static_cast<double>(stats.reserved_bytes[0].peak) / kMiB;
  }
#endif
}

}  // namespace

StepMeasurement measure_step_time(const Config& cfg, const StepOptions& opts) {
  if (opts.steps < 1 || opts.warmup < 0 || opts.vocab < 2)
    throw ConfigError("bench: steps must be >= 1, warmup >= 0 and vocab >= 2 (got steps " +
                      std::to_string(opts.steps) + ", warmup " + std::to_string(opts.warmup) +
                      ", vocab " + std::to_string(opts.vocab) + ")");
  const torch::Device device(cfg.device);
  if (device.is_cuda() && !torch::cuda::is_available())
    throw ConfigError("device: '" + cfg.device + "' asked for, but CUDA is not available",
                      "this LibTorch has no CUDA or no GPU is visible; use --device cpu");
  if (!device.is_cuda()) {
    // The block cache first, so that the counting allocator wraps it (tensor bytes, not blocks).
    apply_cpu_allocator(cfg.cpu_allocator);
    track_cpu_tensor_memory();  // before the model's tensors exist
  }
  const ThreadSettings threads = configure_threads(cfg.threads);
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  StepBench bench(cfg, opts);
  Trainee measured = bench.make_trainee(cfg);
  bench.draw_batch();
  StepMeasurement m;
  m.torch_threads = threads.torch_threads;
  m.blas_threads = threads.blas_threads;
  record_before_steps(measured, device, m);
  bench.measure(measured, m);
  record_peaks(device, m);
  bench.measure_paired(measured, m);
  return m;
}

double median(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return std::isnan(x); }),
               values.end());
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double matmul_gflops(int64_t n, int repeats) {
  torch::NoGradGuard guard;
  auto a = torch::randn({n, n});  // (n,n)
  auto b = torch::randn({n, n});  // (n,n)
  auto c = torch::mm(a, b);       // (n,n) warm-up: first call spins up the BLAS threads
  std::vector<double> s;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c = torch::mm(a, b);  // (n,n)
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(n) * n * n / median(s) * 1e-9;
}

}  // namespace relpos
