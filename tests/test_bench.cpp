// `relpos bench` smoke test (one tiny configuration in child processes, JSON checked), the
// child-process runner, the log-log growth fit and the thread helper. No timing assertions.
#include <doctest/doctest.h>
#include <unistd.h>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/bench/bench.h"
#include "core/bench/bench_report.h"
#include "core/util/errors.h"
#include "core/util/process.h"
#include "core/util/threads.h"
#include "tests/child_log.h"
#include "tests/text_file.h"

using namespace relpos;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("relpos_test_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// The tiny model every bench child of these tests builds.
const std::vector<std::string> kTiny = {
    "--lengths", "16",  "--steps", "1", "--warmup", "0", "--batch", "2", "--threads", "1",
    "--set", "model.layers=1", "--set", "model.width=16", "--set", "model.heads=2",
    "--set", "model.ff_width=32", "--set", "position.shaw.clip=4"};

}  // namespace

TEST_CASE("bench: one tiny configuration writes valid JSON with positive numbers") {
  const std::string json = temp_path("bench.json");
  std::vector<std::string> args = {"bench", "--variants", "none,shaw", "--json", json};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("shaw") != std::string::npos);  // the table

  const auto j = test::read_json(json);
  CHECK(j.at("format") == "relpos-bench-1");
  CHECK(j.at("machine").at("libtorch").get<std::string>().size() > 0);
  CHECK(j.at("blas").at("matmul_1024_gflops").get<double>() > 0);
  CHECK(j.at("options").at("batch") == 2);
  const auto& cases = j.at("cases");
  REQUIRE(cases.size() == 3);  // none fast, shaw fast, shaw direct
  CHECK(cases[0].at("variant") == "none");
  CHECK(cases[2].at("impl") == "direct");
  for (const auto& c : cases) {
    CAPTURE(c.dump());
    REQUIRE(c.at("status") == "ok");
    for (const char* key : {"step_ms", "cpu_ms", "tokens_per_s", "peak_rss_mb", "base_rss_mb",
                            "time_ratio_vs_none", "peak_ratio_vs_none"})
      CHECK(c.at(key).get<double>() > 0);
    CHECK(c.at("length") == 16);
    CHECK(c.at("child").at("batch") == 2);
    CHECK(c.at("child").at("torch_threads") == 1);
    CHECK(std::isfinite(c.at("child").at("loss").get<double>()));
  }
  CHECK(cases[0].at("time_ratio_vs_none").get<double>() == 1.0);  // none against itself
  std::remove(json.c_str());
}

TEST_CASE("bench: --paired times each variant against none in its own process") {
  const std::string json = temp_path("paired.json");
  std::vector<std::string> args = {"bench", "--variants", "none,tisa", "--direct",
                                   "none",  "--paired",   "3",         "--repeat",
                                   "2",     "--json",     json};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("paired xnone [95% CI]") != std::string::npos);

  const auto j = test::read_json(json);
  CHECK(j.at("options").at("paired") == 3);
  CHECK(j.at("command").get<std::string>().find("--paired 3") != std::string::npos);
  const auto& cases = j.at("cases");
  REQUIRE(cases.size() == 2);
  CHECK_FALSE(cases[0].contains("paired_vs_none"));  // none is not paired with itself
  const auto& tisa = cases[1];
  REQUIRE(tisa.at("variant") == "tisa");
  // Peaks are the children's own from before the paired rounds built the second model (the
  // summary is the median of two repeats whose peaks differ by a few kB).
  for (const auto& c : cases)
    CHECK(c.at("peak_rss_mb").get<double>() ==
          doctest::Approx(c.at("child").at("peak_rss_mb").get<double>()).epsilon(0.01));
  CHECK(tisa.at("child").at("ru_maxrss_mb").get<double>() >=
        tisa.at("child").at("peak_rss_mb").get<double>());
  // The pooled rounds of both repeats (n = 2 x 3), the last three being the last child's own
  // times; the ratio and interval recomputed here from them: exp(mean ± t sd/√n) of the log
  // ratios with the table value t(0.975, 5) = 2.570582.
  const auto& p = tisa.at("paired_vs_none");
  const auto logs = p.at("log_ratios").get<std::vector<double>>();
  REQUIRE(logs.size() == 6);
  CHECK(p.at("n") == 6);
  const auto& child = tisa.at("child").at("paired");
  CHECK(child.at("baseline") == "none");
  const auto base = child.at("baseline_ms").get<std::vector<double>>();
  const auto mine = child.at("variant_ms").get<std::vector<double>>();
  REQUIRE(base.size() == 3);
  REQUIRE(mine.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(base[i] > 0);
    CHECK(mine[i] > 0);
    CHECK(logs[3 + i] == doctest::Approx(std::log(mine[i] / base[i])).epsilon(1e-12));
  }
  double mean = 0, ss = 0;
  for (double x : logs) mean += x / 6.0;
  for (double x : logs) ss += (x - mean) * (x - mean);
  const double half = 2.570582 * std::sqrt(ss / 5.0) / std::sqrt(6.0);
  CHECK(p.at("ratio").get<double>() == doctest::Approx(std::exp(mean)).epsilon(1e-9));
  CHECK(p.at("ci95")[0].get<double>() == doctest::Approx(std::exp(mean - half)).epsilon(1e-6));
  CHECK(p.at("ci95")[1].get<double>() == doctest::Approx(std::exp(mean + half)).epsilon(1e-6));

  // One round has no interval: refused before any child runs.
  const ChildResult one = test::call_relpos({"bench", "--paired", "1"});
  CHECK(one.exit_code != 0);
  CHECK(one.err.find("--paired") != std::string::npos);
  std::remove(json.c_str());
}

TEST_CASE("bench: a configuration that fails is reported, not a crash") {
  // At T = 16384 one layer's attention scores alone take 2·2·16384²·4 B = 4 GB, more than the
  // smallest --max-memory (2048 MB) allows: the child's allocation fails, a measurement (a FAILED row),
  // not an error of the options. (A --max-memory too small to load LibTorch is refused up front:
  // tests/test_cli_validation.cpp.)
  const std::string json = temp_path("bench_fail.json");
  std::vector<std::string> args = {"bench", "--variants", "none", "--max-memory", "2048",
                                   "--json", json};
  args.insert(args.end(), kTiny.begin() + 2, kTiny.end());  // all but --lengths 16
  args.insert(args.end(), {"--lengths", "16384"});
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("FAILED") != std::string::npos);
  const auto j = test::read_json(json);
  REQUIRE(j.at("cases").size() == 1);
  CHECK(j.at("cases")[0].at("status") == "failed");
  const std::string error = j.at("cases")[0].at("error").get<std::string>();
  CHECK_MESSAGE(error.find("allocate") != std::string::npos, error);  // the memory, not start-up
  std::remove(json.c_str());
}

TEST_CASE("bench: child processes report exit codes, signals, time limits and output") {
  auto ok = run_child("/bin/sh", {"-c", "echo out; echo err >&2; exit 3"});
  CHECK(ok.exit_code == 3);
  CHECK(ok.out == "out\n");
  CHECK(ok.err == "err\n");
  CHECK(ok.max_rss_mb > 0);
  CHECK(ok.describe(0) == "exit code 3");

  auto killed = run_child("/bin/sh", {"-c", "kill -9 $$"});
  CHECK(killed.signal == 9);
  CHECK(killed.describe(0).find("out of memory?") != std::string::npos);

  auto slow = run_child("/bin/sh", {"-c", "sleep 5"}, {1, 0});
  CHECK(slow.timed_out);
  CHECK(slow.describe(1) == "timed out after 1 s");

  auto env = run_child("/bin/sh", {"-c", "echo $RELPOS_TEST_VAR"}, {}, {"RELPOS_TEST_VAR=x1"});
  CHECK(env.out == "x1\n");
}

TEST_CASE("bench: the log-log slope recovers power laws") {
  const std::vector<double> T = {128, 512, 1024};
  std::vector<double> quad, lin;
  for (double t : T) {
    quad.push_back(3.0 * t * t);
    lin.push_back(0.5 * t);
  }
  CHECK(loglog_slope(T, quad) == doctest::Approx(2.0).epsilon(1e-12));
  CHECK(loglog_slope(T, lin) == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(std::isnan(loglog_slope({128}, {1.0})));
  // Points off a line: x = (0, 1, 2)·ln 2, y = (0, 3, 4)·ln 2, so the least-squares slope is
  // Σ(x-1)(y-7/3) / Σ(x-1)² = (7/3 + 5/3) / 2 = 2.
  CHECK(loglog_slope({1, 2, 4}, {1, 8, 16}) == doctest::Approx(2.0).epsilon(1e-12));
}

TEST_CASE("threads: configure_threads sets LibTorch and OpenBLAS together") {
  const int before = at::get_num_threads();
  const ThreadSettings one = configure_threads(1);
  CHECK(one.torch_threads == 1);
  CHECK(at::get_num_threads() == 1);
  if (!openblas_config().empty()) CHECK(one.blas_threads == 1);
  const ThreadSettings aut = configure_threads(0);
  CHECK(aut.automatic);
  CHECK(aut.torch_threads == automatic_threads());
  CHECK(aut.available >= 1);
  CHECK_THROWS_WITH_AS(configure_threads(-2),
                       doctest::Contains("threads: out of range (got -2"), ConfigError);
  const int64_t too_many = available_cpus() + 1;
  const std::string want = fmt::format(
      "threads: out of range (got {}; expected 0 for automatic or at most the {} CPUs", too_many,
      available_cpus());
  CHECK_THROWS_WITH_AS(configure_threads(too_many), doctest::Contains(want.c_str()), ConfigError);
  CHECK(at::get_num_threads() == aut.torch_threads);  // refused before anything changed
  configure_threads(before);
  CHECK(blas_library().size() > 0);  // some library provides sgemm_
}

TEST_CASE("bench: a GPU run's table and growth fit use the GPU's peak memory, not the host's") {
  // Hand-made summaries of a CUDA run: GPU peak of `shaw` is 3x none's at T=512; both grow ~T^2.
  auto gpu_case = [](const std::string& v, int64_t T, double ms, double gpu_mb, double ratio) {
    CaseSummary c;
    c.key = {v, "fast", T};
    c.runs = 1;
    c.step_ms = ms;
    c.time_ratio = 1;
    c.peak_mb = 777;  // host RSS: the same for every case, so it cannot be what the fit sees
    c.step_mb = 5;
    c.cuda_peak_mb = gpu_mb;
    c.cuda_ratio = ratio;
    return c;
  };
  const std::vector<CaseSummary> cases = {gpu_case("none", 512, 1, 100, 1), gpu_case("shaw", 512, 2, 300, 3),
                                          gpu_case("none", 1024, 3, 400, 1), gpu_case("shaw", 1024, 6, 1200, 3)};
  const auto fits = growth_fits(cases);
  REQUIRE(fits.size() == 2);
  for (const auto& f : fits) CHECK(f.memory_exponent == doctest::Approx(2.0).epsilon(1e-9));
  const std::string table = bench_table(cases, fits);
  INFO(table);
  CHECK(table.find("GPU MB") != std::string::npos);
  CHECK(table.find("host MB") != std::string::npos);
  CHECK(table.find("step MB") == std::string::npos);
  // The shaw row at T=512 shows its GPU peak, its ratio to none and the host RSS.
  CHECK(table.find("300   3.00      777") != std::string::npos);
  CHECK(table.find("host MB: ru_maxrss of the child.") != std::string::npos);

  // With --paired both peaks are taken before the paired rounds, and the footnote says so.
  auto paired_cases = cases;
  paired_cases[1].paired_ratio = 1.5;
  paired_cases[1].paired_lo = 1.4;
  paired_cases[1].paired_hi = 1.6;
  paired_cases[1].paired_log_ratios = {0.4, 0.41};
  const std::string paired_table = bench_table(paired_cases, fits);
  INFO(paired_table);
  CHECK(paired_table.find("1.500 [1.400, 1.600] n=2") != std::string::npos);
  CHECK(paired_table.find("caching allocator before the paired rounds; host MB: the child's "
                          "VmHWM before its paired rounds.") != std::string::npos);
  CHECK(paired_table.find("ru_maxrss") == std::string::npos);
}

TEST_CASE("bench: --attention measures every case with each attention path, ratios within it") {
  BenchPlan plan;
  plan.variants = {"alibi", "shaw"};
  plan.lengths = {16};
  plan.direct = {"shaw"};
  plan.attention = {"eager", "fused"};
  std::vector<std::string> impls;
  for (const auto& c : plan_cases(plan)) impls.push_back(c.variant + ":" + c.impl);
  CHECK(impls == std::vector<std::string>{"none:fast/eager", "none:fast/fused", "alibi:fast/eager",
                                          "alibi:fast/fused", "shaw:fast/eager", "shaw:direct/eager",
                                          "shaw:fast/fused", "shaw:direct/fused"});
  CHECK(relative_impl_of("direct/fused") == "direct");
  CHECK(attention_impl_of("direct/fused") == "fused");
  CHECK(attention_impl_of("fast").empty());

  // A real run (eager and auto: fused needs LibTorch >= 2.0): the child says which path ran.
  const std::string json = temp_path("bench_attention.json");
  std::vector<std::string> args = {"bench", "--variants", "none", "--attention", "eager,auto",
                                   "--json", json};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto cases = test::read_json(json).at("cases");
  REQUIRE(cases.size() == 2);
  CHECK(cases[1].at("impl") == "fast/auto");
  CHECK(cases[0].at("child").at("attention_impl") == "eager");
  CHECK(cases[0].at("child").at("attention") == "eager");
  CHECK(cases[1].at("child").at("attention") ==
        (TORCH_VERSION_MAJOR >= 2 ? "fused" : "eager"));  // auto
  std::remove(json.c_str());

  // fused where LibTorch lacks it, or an unknown path: refused before any child runs.
  if (TORCH_VERSION_MAJOR < 2) {
    const ChildResult bad = test::call_relpos({"bench", "--attention", "fused"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--attention fused") != std::string::npos);
  }
  const ChildResult bad = test::call_relpos({"bench", "--attention", "flash"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("model.attention_impl") != std::string::npos);
}
