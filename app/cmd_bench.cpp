// relpos bench: step time and peak memory of position variants across lengths (issue 6).
// Every configuration runs in a child process (this executable, `bench --child`), whose peak
// RSS the parent reads with wait4(); see core/bench/bench.h.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "analysis/inference.h"
#include "app/commands.h"
#include "core/bench/bench.h"
#include "core/bench/measure.h"
#include "core/bench/report.h"
#include "core/config/labelled_override.h"
#include "core/model/fused_attention.h"
#include "core/position/registry.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/process.h"
#include "core/util/system.h"
#include "core/util/threads.h"

namespace relpos::app {
namespace {

namespace fs = std::filesystem;

// --max-memory below this is refused: the limit is on address space, and a LibTorch process
// maps several hundred MB of it (libraries, thread stacks, allocator arenas) before its first
// tensor. Measured on the CPU build: below 768 MB a child cannot load its libraries, at 768 MB
// it spins, at 1024 MB a tiny step runs many times slower. Each would read as a measurement.
constexpr double kMinMaxMemoryMb = 2048;

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
  LoadedConfig load(const std::vector<std::string>& extra_sets = {},
                    const std::vector<LabelledOverride>& labelled = {}) const {
    std::vector<std::string> files = config.configs;
    if (files.empty()) files = {config_dir() + "/base.yaml", config_dir() + "/bench.yaml"};
    std::vector<std::string> sets = config_sets();
    sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
    return load_config(files, sets, labelled);
  }
};

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

int run_child_mode(const BenchArgs& a) {
  const LoadedConfig loaded = a.load();
  const StepMeasurement m = measure_step_time(loaded.config, a.step);
  std::cout << kResultTag << measurement_json(m, loaded.config).dump() << std::endl;
  return 0;
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

int run_parent(const BenchArgs& a, const std::string& command_line) {
  // Every option is checked here, before any child runs (CLI11 checked the numbers' ranges).
  if (!a.json.empty()) check_writable_file(a.json);
  if (a.max_memory_mb > 0 && a.max_memory_mb < kMinMaxMemoryMb)
    throw ConfigError(
        fmt::format("bench: --max-memory {}: too small (expected 0 = no limit, or at least {:.0f} "
                    "MB: a LibTorch process maps that much address space before its first tensor)",
                    a.max_memory_mb, kMinMaxMemoryMb),
        "leave it out for 3/4 of the machine's memory");
  const LoadedConfig loaded = a.load();  // validates the config before any child runs
  const Config& c = loaded.config;
  (void)parse_device(c.device);  // device: cuda without CUDA fails here, not once per child
  BenchPlan plan;
  plan.variants = a.variants.empty() ? Registry::get().names() : a.variants;
  for (const auto& v : plan.variants)  // names, params; an error names --variants
    (void)a.load({}, {{"position.type=" + v, "command line (--variants " + v + ")"}});
  plan.lengths = a.lengths;
  if (plan.lengths.empty()) throw ConfigError("bench: --lengths is empty", "for example --lengths 128,512");
  for (const int64_t L : plan.lengths)  // checked once here, not failed once per child
    if (L < 2)
      throw ConfigError(fmt::format("bench: --lengths: {} is too short (expected lengths >= 2)", L),
                        "for example --lengths 128,512");
  if (a.direct == "auto") {
    plan.direct = default_direct_variants(plan.variants);
  } else if (a.direct != "none") {
    std::stringstream in(a.direct);
    std::vector<std::string> allowed;
    for (const auto& v : plan.variants)
      if (has_direct_path(v)) allowed.push_back(v);
    for (std::string v; std::getline(in, v, ',');) {
      if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
        throw ConfigError(
            fmt::format("bench: --direct: '{}' is not a measured variant with a direct path "
                        "(expected auto, none, or a list of: {})",
                        v, allowed.empty() ? std::string("(none among --variants)") : fmt::format("{}", fmt::join(allowed, ", "))),
            fmt::format("the relative variants {} have one; list them in --variants too",
                        two_path_variants()));
      plan.direct.push_back(v);
    }
  }
  for (const auto& v : a.attention)  // auto | eager | fused, and fused only where LibTorch has it
    (void)a.load({}, {{"model.attention_impl=" + v, "command line (--attention " + v + ")"}});
  plan.attention = a.attention;
  plan.repeats = a.repeats;
  plan.paired = static_cast<int>(a.step.paired);
  plan.timeout_s = a.timeout_s;
  plan.max_memory_mb = a.max_memory_mb >= 0 ? a.max_memory_mb : 0.75 * physical_memory_mb();
  plan.program = self_executable();
  plan.child_args = {"bench", "--child", "--steps", std::to_string(a.step.steps), "--warmup",
                     std::to_string(a.step.warmup), "--vocab", std::to_string(a.step.vocab)};
  if (a.step.optimizer) plan.child_args.push_back("--optimizer");
  for (const auto& f : a.config.configs) plan.child_args.insert(plan.child_args.end(), {"--config", f});
  for (const auto& s : a.config_sets()) plan.child_args.insert(plan.child_args.end(), {"--set", s});

  nlohmann::ordered_json header;
  header["format"] = "relpos-bench-1";
  header["command"] = command_line;
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
                       {"steps", a.step.steps},
                       {"warmup", a.step.warmup},
                       {"repeats", plan.repeats},
                       {"paired", plan.paired},
                       {"timeout_s", plan.timeout_s},
                       {"max_memory_mb", plan.max_memory_mb},
                       {"vocab", a.step.vocab},
                       {"optimizer", a.step.optimizer}};
  std::cout << fmt::format(
                   "relpos bench: {} layers, D={}, H={}, ff={}, {} mode, batch {}, "
                   "device {}, precision {}, threads {}, CPU allocator {}; {} warm-up + {} "
                   "measured steps, {} repeat(s)\n",
                   c.model.layers, c.model.width, c.model.heads, c.model.ff_width, c.model.mode,
                   c.train.batch_size, c.device, c.precision,
                   c.threads == 0 ? std::string("auto") : std::to_string(c.threads),
                   c.cpu_allocator, a.step.warmup, a.step.steps, plan.repeats)
            << fmt::format(
                   "machine: {} ({} CPUs available, transparent huge pages: {}), "
                   "LibTorch {}; attention: {}\n",
                   header["machine"]["cpu"].get<std::string>(),
                   header["machine"]["available_cpus"].get<int>(),
                   header["machine"]["transparent_huge_pages"].get<std::string>(), TORCH_VERSION,
                   fused_attention_status())
            << blas_line(header["blas"]) << "\n"
            << std::flush;

  auto progress = [](const BenchCase& k, int done, int total, const std::string& line) {
    std::cerr << fmt::format("[{}/{}] {} {} T={}: {}\n", done, total, k.variant, k.impl, k.length,
                             line);
  };
  auto cases = run_bench(plan, progress);
  add_paired_intervals(cases);
  const auto fits = growth_fits(cases);
  std::cout << "\n" << bench_table(cases, fits);
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    if (out) out << bench_json(header, cases, fits).dump(2) << "\n";
    if (out) out.close();
    if (!out) throw RunError(fmt::format("bench: cannot write {}: {}", a.json, std::strerror(errno)));
    std::cout << "wrote " << a.json << "\n";
  }
  return 0;
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
                              kMinMaxMemoryMb))
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
    if (a->child) return run_child_mode(*a);
    if (a->blas) {
      const LoadedConfig loaded = a->load();
      std::cout << blas_line(blas_report(loaded.config)) << "\n"
                << "attention: " << fused_attention_status() << "\n";
      return 0;
    }
    return run_parent(*a, a->command_line());
  }};
}

}  // namespace relpos::app
