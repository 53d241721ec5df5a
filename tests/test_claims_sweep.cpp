// Claims for everyone (docs/analysis.md, "Claims of your own sweep"): a tiny sweep whose YAML has
// a `claims:` block, run by the relpos executable, then `relpos report`; the verdict and numbers
// in its claims.json against the ones computed here from the runs' own result.json files with
// the textbook paired t test (seed variance plus each run's evaluation noise, loss_sd² / items).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/distributions.h"
#include "tests/helpers.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// A causal byte LM on the trainer fixture: small and quick, two variants, five seeds.
std::string sweep_yaml(const std::string& cache) {
  return "include: " + config_path("base.yaml") + "\n" +
         "data: {corpus: " + fixture_path("trainer/corpus.txt") + ", cache_dir: " + cache +
         ", tokenizer: bytes, valid_fraction: 0.2, test_fraction: 0.2}\n"
         "task: {type: clm, seq_len: 16}\n"
         "model: {mode: decoder, layers: 1, width: 32, heads: 2, ff_width: 64, dropout: 0.0, "
         "attention_dropout: 0.0}\n"
         "position: {learned: {max_len: 16}}\n"
         "train: {steps: 30, batch_size: 8, lr: 0.003, eval_every: 30, eval_batches: 2, "
         "log_every: 10, checkpoint_every: 30}\n"
         "snapshots: {every_percent: 50, probe_size: 2}\n"
         "threads: 1\n"
         "sweep: {grid: [\"position.type=none,learned\", \"seed=1,2,3,4,5\"], jobs: 2}\n"
         "claims:\n"
         "  - id: learned-helps\n"
         "    quote: \"learned beats none\"\n"
         "    source: \"a test\"\n"
         "    metric: \"validation loss (nats/byte; lower is better)\"\n"
         "    comparisons:\n"
         "      - {test: better, a: learned, b: none, key: valid_loss, higher_is_better: false}\n";
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("claims: a sweep's claims block is judged by relpos report, as computed by hand") {
  TempFolder tmp("claims_sweep");
  const std::string cfg = tmp.str("mysweep.yaml");
  std::ofstream(cfg) << sweep_yaml(tmp.str("cache"));
  const std::string out = tmp.str("sweep");
  const auto [code, log] = run_relpos({"sweep", "--config", cfg, "--out", out}, tmp.str("sweep.log"), 900);
  REQUIRE_MESSAGE(code == 0, log);
  CHECK(fs::exists(fs::path(out) / "claims.yaml"));  // the sweep keeps its claims
  const auto [rcode, rlog] = run_relpos({"report", out}, tmp.str("report.log"), 600);
  REQUIRE_MESSAGE(rcode == 0, rlog);

  // By hand: learned − none per seed, oriented lower-is-better; each run's evaluation variance.
  std::vector<double> d, v;
  for (int seed = 1; seed <= 5; ++seed) {
    const auto l = read_json(fs::path(out) / ("learned-seed" + std::to_string(seed)) / "result.json")["valid"];
    const auto n = read_json(fs::path(out) / ("none-seed" + std::to_string(seed)) / "result.json")["valid"];
    d.push_back(n["loss"].get<double>() - l["loss"].get<double>());  // positive = learned better
    const auto var = [](const nlohmann::json& j) {
      const double sd = j["loss_sd"].get<double>();
      return sd * sd / j["items"].get<double>();
    };
    v.push_back(var(l) + var(n));
  }
  double m = 0, ss = 0, vm = 0;
  for (size_t k = 0; k < 5; ++k) m += d[k] / 5, vm += v[k] / 5;
  for (double x : d) ss += (x - m) * (x - m);
  const double s2n = ss / 4 / 5, se = std::sqrt(s2n + vm);
  const double df = std::pow(se, 4) / (s2n * s2n / 4);
  const double t = m / se, p = 2 * analysis::student_t_cdf(-std::abs(t), df);
  const std::string expected = p < 0.05 ? (t > 0 ? "supported" : "not supported") : "inconclusive";

  const auto claims = read_json(fs::path(out) / "claims.json");
  const auto& c = claims["claims"].at(0);
  const auto& part = c["parts"].at(0);
  CHECK(c["id"] == "learned-helps");
  CHECK(part["n"] == 5);
  CHECK(part["effect"].get<double>() == doctest::Approx(-m));  // reported as learned − none
  CHECK(part["t"].get<double>() == doctest::Approx(t));
  CHECK(part["p_two"].get<double>() == doctest::Approx(p));
  CHECK(part["eval_var"].get<double>() == doctest::Approx(vm));
  CHECK(c["verdict"] == expected);
  // The report ends with the Claims section.
  std::ifstream md(fs::path(out) / "report.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  CHECK(text.find("## Claims") != std::string::npos);
  CHECK(text.find("\"learned beats none\"") != std::string::npos);
}

TEST_CASE("claims: a claims file with a typo is an error naming the file, line and key") {
  TempFolder tmp("claims_bad");
  const std::string cfg = tmp.str("bad.yaml");
  std::ofstream(cfg) << "claims:\n"
                        "  - id: x\n"
                        "    quote: q\n"
                        "    source: s\n"
                        "    metric: m\n"
                        "    comparisons:\n"
                        "      - {test: beter, a: learned, b: none, key: valid_loss}\n";
  const auto [code, log] = run_relpos({"config", "--config", cfg}, tmp.str("log"), 60);
  CHECK(code != 0);
  CHECK(log.find("bad.yaml:7") != std::string::npos);
  CHECK(log.find("claims[0].comparisons[0].test: unknown value") != std::string::npos);
  CHECK(log.find("'beter'") != std::string::npos);
  // A regime id that does not exist.
  std::ofstream(cfg) << "claims:\n"
                        "  - {id: x, quote: q, source: s, metric: m, requires: [nope],\n"
                        "     comparisons: [{a: learned, b: none, key: valid_loss}]}\n";
  const auto [code2, log2] = run_relpos({"config", "--config", cfg}, tmp.str("log2"), 60);
  CHECK(code2 != 0);
  CHECK(log2.find("claims[0].requires[0]: no claim has this id") != std::string::npos);
}
