#include "core/bench/bench_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/bench/bench_report.h"
#include "core/model/fused_attention.h"
#include "core/position/position_registry.h"
#include "core/util/device.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/process.h"
#include "core/util/system.h"
#include "core/util/threads.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;

// --json's file must be writable before the bench starts, not after it has run for hours.
void check_writable_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw ConfigError(fmt::format("bench: --json {}: is a folder (expected a file to write)", path),
                      "give a file name, e.g. --json " + (fs::path(path) / "bench.json").string());
  const bool existed = fs::exists(path, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw ConfigError(fmt::format("bench: --json {}: cannot write: {}", path, std::strerror(errno)),
                      "choose a file in a writable folder");
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
}

nlohmann::ordered_json measurement_json(const StepMeasurement& m, const Config& c) {
  nlohmann::ordered_json j;
  j["variant"] = fmt::format("{}", fmt::join(c.position.types, "+"));
  j["impl"] = c.position.relative_impl;
  j["attention_impl"] = c.model.attention_impl;
  j["attention"] = m.attention;  // the path the steps ran: fused or eager
  j["precision"] = c.precision;
  j["length"] = c.task.seq_len;
  j["batch"] = c.train.batch_size;
  j["layers"] = c.model.layers;
  j["width"] = c.model.width;
  j["heads"] = c.model.heads;
  j["mode"] = c.model.mode;
  j["device"] = m.device;
  j["step_ms"] = m.step_ms_median;
  j["step_ms_min"] = m.step_ms_min;
  j["step_ms_max"] = m.step_ms_max;
  j["cpu_ms"] = m.cpu_ms_median;
  j["tokens_per_s"] = m.tokens_per_s;
  j["loss"] = m.loss;
  j["base_rss_mb"] = m.base_rss_mb;
  j["peak_rss_mb"] = m.peak_rss_mb;
  j["tensor_base_mb"] = m.tensor_base_mb;
  j["tensor_peak_mb"] = m.tensor_peak_mb;
  j["cuda_peak_mb"] = m.cuda_peak_mb;
  j["cuda_reserved_mb"] = m.cuda_reserved_mb;
  j["parameters"] = m.parameters;
  j["position_parameters"] = m.position_parameters;
  j["torch_threads"] = m.torch_threads;
  j["blas_threads"] = m.blas_threads;
  if (!m.paired_baseline.empty())
    j["paired"] = {{"baseline", m.paired_baseline},
                   {"order", "ABBA: the baseline first in rounds 1, 3, ..."},
                   {"baseline_ms", m.paired_baseline_ms},
                   {"variant_ms", m.paired_variant_ms}};
  return j;
}

nlohmann::ordered_json blas_report(const Config& c) {
  const ThreadSettings t = configure_threads(c.threads);
  nlohmann::ordered_json j;
  j["library"] = blas_library();
  j["openblas_config"] = openblas_config();
  j["torch_threads"] = t.torch_threads;
  j["blas_threads"] = t.blas_threads;
  j["matmul_1024_gflops"] = matmul_gflops(1024, 5);
  return j;
}

std::string blas_line(const nlohmann::ordered_json& b) {
  return fmt::format("BLAS: sgemm_ from {} ({}); {} torch / {} BLAS threads; 1024x1024 matmul "
                     "{:.1f} GFLOP/s",
                     b["library"].get<std::string>(), b["openblas_config"].get<std::string>(),
                     b["torch_threads"].get<int>(), b["blas_threads"].get<int>(),
                     b["matmul_1024_gflops"].get<double>());
}

// "shaw, transformer_xl, huang, huang_m3 and huang_m4": the registered variants with a direct
// path.
std::string two_path_variants() {
  std::vector<std::string> names = default_direct_variants(Registry::get().names());
  if (names.empty()) return "(none)";
  const std::string last = names.back();
  names.pop_back();
  return names.empty() ? last : fmt::format("{} and {}", fmt::join(names, ", "), last);
}

// --direct's variants: auto (every measured variant with a direct path), none, or a list of them.
std::vector<std::string> direct_variants(const std::string& direct,
                                         const std::vector<std::string>& variants) {
  if (direct == "auto") return default_direct_variants(variants);
  std::vector<std::string> out;
  if (direct == "none") return out;
  std::vector<std::string> allowed;
  for (const auto& v : variants)
    if (has_direct_path(v)) allowed.push_back(v);
  std::stringstream in(direct);
  for (std::string v; std::getline(in, v, ',');) {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      throw ConfigError(
          fmt::format("bench: --direct: '{}' is not a measured variant with a direct path "
                      "(expected auto, none, or a list of: {})",
                      v,
                      allowed.empty() ? std::string("(none among --variants)")
                                      : fmt::format("{}", fmt::join(allowed, ", "))),
          fmt::format("the relative variants {} have one; list them in --variants too",
                      two_path_variants()));
    out.push_back(v);
  }
  return out;
}

// Checks every option (a ConfigError names it) and turns the request into the children's plan.
BenchPlan checked_plan(const BenchRequest& r) {
  if (!r.json.empty()) check_writable_file(r.json);
  if (r.max_memory_mb > 0 && r.max_memory_mb < kMinBenchMaxMemoryMb)
    throw ConfigError(
        fmt::format("bench: --max-memory {}: too small (expected 0 = no limit, or at least {:.0f} "
                    "MB: a LibTorch process maps that much address space before its first tensor)",
                    r.max_memory_mb, kMinBenchMaxMemoryMb),
        "leave it out for 3/4 of the machine's memory");
  const Config c = r.load().config;  // validates the config before any child runs
  (void)parse_device(c.device);      // device: cuda without CUDA fails here, not once per child
  BenchPlan plan;
  plan.variants = r.variants.empty() ? Registry::get().names() : r.variants;
  for (const auto& v : plan.variants)  // names, params; an error names --variants
    (void)r.load({}, {{"position.type=" + v, "command line (--variants " + v + ")"}});
  plan.lengths = r.lengths;
  if (plan.lengths.empty())
    throw ConfigError("bench: --lengths is empty", "for example --lengths 128,512");
  for (const int64_t L : plan.lengths)  // checked once here, not failed once per child
    if (L < 2)
      throw ConfigError(fmt::format("bench: --lengths: {} is too short (expected lengths >= 2)", L),
                        "for example --lengths 128,512");
  plan.direct = direct_variants(r.direct, plan.variants);
  for (const auto& v : r.attention)  // auto | eager | fused, and fused only where LibTorch has it
    (void)r.load({}, {{"model.attention_impl=" + v, "command line (--attention " + v + ")"}});
  plan.attention = r.attention;
  plan.repeats = r.repeats;
  plan.paired = static_cast<int>(r.step.paired);
  plan.timeout_s = r.timeout_s;
  plan.max_memory_mb = r.max_memory_mb >= 0 ? r.max_memory_mb : 0.75 * physical_memory_mb();
  plan.program = self_executable();
  plan.child_args = {"bench", "--child", "--steps", std::to_string(r.step.steps), "--warmup",
                     std::to_string(r.step.warmup), "--vocab", std::to_string(r.step.vocab)};
  if (r.step.optimizer) plan.child_args.push_back("--optimizer");
  for (const auto& f : r.configs) plan.child_args.insert(plan.child_args.end(), {"--config", f});
  for (const auto& s : r.sets) plan.child_args.insert(plan.child_args.end(), {"--set", s});
  return plan;
}

// The JSON header: the command, the machine, the BLAS and every option the children ran with.
nlohmann::ordered_json bench_header(const BenchRequest& r, const BenchPlan& plan, const Config& c) {
  nlohmann::ordered_json header;
  header["format"] = "relpos-bench-1";
  header["command"] = r.command_line;
  header["machine"] = machine_info();
  header["blas"] = blas_report(c);
  header["options"] = {{"variants", plan.variants},
                       {"lengths", plan.lengths},
                       {"direct", plan.direct},
                       {"attention", plan.attention},
                       {"attention_available", fused_attention_status()},
                       {"batch", c.train.batch_size},
                       {"layers", c.model.layers},
                       {"width", c.model.width},
                       {"heads", c.model.heads},
                       {"ff_width", c.model.ff_width},
                       {"mode", c.model.mode},
                       {"device", c.device},
                       {"threads", c.threads},
                       {"cpu_allocator", c.cpu_allocator},
                       {"precision", c.precision},
                       {"steps", r.step.steps},
                       {"warmup", r.step.warmup},
                       {"repeats", plan.repeats},
                       {"paired", plan.paired},
                       {"timeout_s", plan.timeout_s},
                       {"max_memory_mb", plan.max_memory_mb},
                       {"vocab", r.step.vocab},
                       {"optimizer", r.step.optimizer}};
  return header;
}

void print_bench_header(const nlohmann::ordered_json& header, const Config& c,
                        const StepOptions& step, int repeats) {
  std::cout << fmt::format(
                   "relpos bench: {} layers, D={}, H={}, ff={}, {} mode, batch {}, "
                   "device {}, precision {}, threads {}, CPU allocator {}; {} warm-up + {} "
                   "measured steps, {} repeat(s)\n",
                   c.model.layers, c.model.width, c.model.heads, c.model.ff_width, c.model.mode,
                   c.train.batch_size, c.device, c.precision,
                   c.threads == 0 ? std::string("auto") : std::to_string(c.threads),
                   c.cpu_allocator, step.warmup, step.steps, repeats)
            << fmt::format(
                   "machine: {} ({} CPUs available, transparent huge pages: {}), "
                   "LibTorch {}; attention: {}\n",
                   header["machine"]["cpu"].get<std::string>(),
                   header["machine"]["available_cpus"].get<int>(),
                   header["machine"]["transparent_huge_pages"].get<std::string>(), TORCH_VERSION,
                   fused_attention_status())
            << blas_line(header["blas"]) << "\n"
            << std::flush;
}

void write_bench_json(const std::string& path, const nlohmann::ordered_json& json) {
  std::ofstream out(path);
  if (out) out << json.dump(2) << "\n";
  if (out) out.close();
  if (!out) throw RunError(fmt::format("bench: cannot write {}: {}", path, std::strerror(errno)));
  std::cout << "wrote " << path << "\n";
}

}  // namespace

LoadedConfig BenchRequest::load(const std::vector<std::string>& extra_sets,
                                const std::vector<LabelledOverride>& labelled) const {
  std::vector<std::string> files = configs;
  if (files.empty()) files = {config_dir() + "/base.yaml", config_dir() + "/bench.yaml"};
  std::vector<std::string> all = sets;
  all.insert(all.end(), extra_sets.begin(), extra_sets.end());
  return load_config(files, all, labelled);
}

int run_bench_parent(const BenchRequest& request,
                     const std::function<void(std::vector<CaseSummary>&)>& paired_intervals) {
  const BenchPlan plan = checked_plan(request);
  const Config c = request.load().config;
  const nlohmann::ordered_json header = bench_header(request, plan, c);
  print_bench_header(header, c, request.step, plan.repeats);
  auto progress = [](const BenchCase& k, int done, int total, const std::string& line) {
    std::cerr << fmt::format("[{}/{}] {} {} T={}: {}\n", done, total, k.variant, k.impl, k.length,
                             line);
  };
  auto cases = run_bench(plan, progress);
  paired_intervals(cases);
  const auto fits = growth_fits(cases);
  std::cout << "\n" << bench_table(cases, fits);
  if (!request.json.empty()) write_bench_json(request.json, bench_json(header, cases, fits));
  return 0;
}

int run_bench_child(const BenchRequest& request) {
  const LoadedConfig loaded = request.load();
  const StepMeasurement m = measure_step_time(loaded.config, request.step);
  std::cout << kResultTag << measurement_json(m, loaded.config).dump() << std::endl;
  return 0;
}

std::string blas_summary(const Config& config) { return blas_line(blas_report(config)); }

}  // namespace relpos
