// precision: bf16 — forward passes under bfloat16 autocast. Every variant trains with losses
// close to float32's (and not equal to them: the casts happen), the scope restores the autocast
// state, and evaluation runs under it too.
#include <doctest/doctest.h>

#include <cmath>

#include "core/model/model.h"
#include "core/position/position_registry.h"
#include "core/train/extrapolation.h"
#include "core/train/run_model.h"
#include "core/train/trainer.h"
#include "core/util/precision.h"
#include "tests/helpers.h"
#include "tests/small_model.h"
#include "tests/tiny_run.h"

using namespace relpos;

TEST_CASE("precision: the bf16 scope makes matrix products bfloat16 and restores the state") {
  const auto a = torch::randn({4, 8}), b = torch::randn({8, 3});
  {
    const PrecisionScope fp32("fp32", torch::kCPU);
    CHECK((torch::matmul(a, b).scalar_type() == torch::kFloat32));
  }
  {
    const PrecisionScope bf16("bf16", torch::kCPU);
    CHECK((torch::matmul(a, b).scalar_type() == torch::kBFloat16));
    {
      const AutocastOff off;  // what the hand-written autograd Functions run under
      CHECK((torch::matmul(a, b).scalar_type() == torch::kFloat32));
    }
  }
  CHECK((torch::matmul(a, b).scalar_type() == torch::kFloat32));
}

TEST_CASE("precision: every variant trains under bf16 with losses within 2 % of float32's") {
  test::TempFolder tmp("precision");
  const std::string cache = tmp.str("cache");
  for (const std::string& v : Registry::get().names()) {
    CAPTURE(v);
    std::vector<double> loss[2];
    int i = 0;
    for (const char* p : {"fp32", "bf16"}) {
      auto sets = test::tiny_run(cache, 2);
      sets.insert(sets.end(), {"position.type=" + v, std::string("precision=") + p,
                               "snapshots.every_percent=0", "train.eval_every=2"});
      const std::string dir = tmp.str(v + "_" + p);
      REQUIRE(test::train_here(sets, dir).finished);
      for (const auto& [step, value] : test::logged(dir, "train_loss")) loss[i].push_back(value);
      ++i;
    }
    REQUIRE(loss[0].size() == 2);
    REQUIRE(loss[1].size() == 2);
    for (size_t s = 0; s < 2; ++s) {
      CHECK(std::isfinite(loss[1][s]));
      CHECK(std::abs(loss[1][s] - loss[0][s]) < 0.02 * loss[0][s]);
    }
    CHECK(loss[1][0] != loss[0][0]);  // bfloat16 products round differently
  }
}

TEST_CASE("precision: eval of a causal LM under bf16 is close to float32") {
  test::TempFolder tmp("precision_eval");
  auto sets = test::tiny_run(tmp.str("cache"), 2);
  sets.insert(sets.end(), {"task.type=clm", "model.mode=decoder", "position.type=huang_m3",
                           "task.seq_len=16", "snapshots.every_percent=0"});
  REQUIRE(test::train_here(sets, tmp.str("run")).finished);
  ExtrapolationOptions eo;
  eo.lengths = {16, 32};
  eo.stride = 8;
  eo.max_tokens = 2048;
  double loss[2][2];
  int i = 0;
  for (const char* p : {"fp32", "bf16"}) {
    LoadedRun run = load_run(tmp.str("run"), {std::string("precision=") + p});
    const auto rows = evaluate_lengths(run, eo);
    REQUIRE(rows.size() == 2);
    for (int r = 0; r < 2; ++r) loss[i][r] = rows[r].metrics.at("loss_sliding");
    ++i;
  }
  for (int r = 0; r < 2; ++r) {
    CHECK(std::abs(loss[1][r] - loss[0][r]) < 0.02 * loss[0][r]);
    CHECK(loss[1][r] != loss[0][r]);
  }
}

// Past position 256 bfloat16 no longer holds every integer: positions, distances and angles
// must be formed in float32/64 and only the results cast. Every variant's attention at
// T = 600 under bf16 autocast must then follow float32's to bfloat16 rounding: its score
// terms (each relative to its size) and the layer outputs. This also runs the gather path of
// the relative terms (bfloat16 skips the CPU row kernels), which CUDA takes too.
TEST_CASE("precision: bf16 attention follows float32 at long lengths for every variant") {
  const int64_t T = 600;
  for (const std::string& v : Registry::get().names()) {
    CAPTURE(v);
    const Config cfg = test::small_config(
        v, false, {"task.seq_len=" + std::to_string(T), "position.learned.max_len=" + std::to_string(T)});
    Model m = test::small_model(cfg);
    torch::manual_seed(3);
    const auto tokens = torch::randint(0, 40, {1, T});  // (B,T)
    std::vector<AttentionRecord> rec[2];
    torch::Tensor hidden[2];
    int i = 0;
    for (const char* p : {"fp32", "bf16"}) {
      const PrecisionScope scope(p, torch::kCPU);
      ForwardOptions o;
      o.records = &rec[i];
      torch::NoGradGuard guard;
      hidden[i] = m->hidden(tokens, o).to(torch::kFloat);  // (B,T,D)
      ++i;
    }
    auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
      const auto x = a.to(torch::kFloat), y = b.to(torch::kFloat);
      return ((x - y).abs().max() / (y.abs().max() + 1e-6)).item<double>();
    };
    for (size_t l = 0; l < rec[0].size(); ++l)
      for (size_t t = 0; t < rec[0][l].terms.size(); ++t)
        if (rec[0][l].terms[t].defined()) {
          CAPTURE(l);
          CAPTURE(t);
          CHECK(rel(rec[1][l].terms[t], rec[0][l].terms[t]) < 0.03);
        }
    CHECK(rel(hidden[1], hidden[0]) < 0.05);
  }
}
