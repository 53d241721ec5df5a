// README.md, "Adding a position encoding", as a test. A throw-away variant made the way the
// recipe says — (1) its file: a header comment, a parameter struct, one class overriding the
// hooks it needs, a register function; (2) one registry line; (3) a YAML overlay; (4) a
// naive-loop test; (5) its schema row — goes through the generic machinery with no other change:
// config loading and validation, the model, the trainer (snapshots, run.h5, its positional
// parameter count), the analysis of that run, bench's plan and eval's settings.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/run_source.h"
#include "core/bench/bench.h"
#include "core/config/config.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/model/model.h"
#include "core/position/position_encoding.h"
#include "core/position/position_registry.h"
#include "core/train/past_bound.h"
#include "core/util/errors.h"
#include "experiments/experiment_context.h"
#include "tests/helpers.h"
#include "tests/naive_attention.h"
#include "tests/tiny_run.h"
#include "tests/variant_helpers.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

// ---- (1) The variant's file ---------------------------------------------------------------
// test_decay — a throw-away variant of this test: a learned linear distance penalty.
// Formula: e_ij += -w_{l,h} · min(|j - i|, C) (C = cap; 0: no cap); w initialised to `slope`.
// Hook: score term (3). Parameters per layer: H. Past the training length: defined at any
// distance; `cap` may be changed when a trained run is evaluated.
constexpr const char* kName = "test_decay";

struct DecayParams : ParamsOf<DecayParams> {
  double slope = 0.1;
  int64_t cap = 0;
  template <class V>
  void visit(V& v) {
    v("slope", slope, "initial penalty per unit of distance");
    v("cap", cap, "largest distance penalised, 0 = none");
  }
};

class DecayImpl : public PositionEncodingImpl {
 public:
  DecayImpl(const ModelDims& d, const DecayParams& p) : cap_(p.cap) {
    w = register_parameter("w", torch::full({d.param_layers, d.heads}, p.slope));  // (Lp,H)
  }
  std::string type() const override { return kName; }

  torch::Tensor score_term(const torch::Tensor& content, const torch::Tensor&,
                           const torch::Tensor&, const AttentionContext& ctx) override {
    const int64_t T = content.size(-1);
    auto pos = torch::arange(T, content.options());                  // (T)
    auto dist = (pos.unsqueeze(0) - pos.unsqueeze(1)).abs();         // (T,T)
    if (cap_ > 0) dist = dist.clamp_max(static_cast<double>(cap_));  // (T,T)
    return -w[ctx.layer].to(content.dtype()).view({1, -1, 1, 1}) * dist;  // (1,H,T,T)
  }

  std::vector<ExportedTensor> export_tensors(const ExportOptions&) override {
    return {{"slopes", w.detach().to(torch::kCPU, torch::kFloat32).clone(), {"layer", "head"}}};
  }

  torch::Tensor w;

 private:
  int64_t cap_;
};

VariantInfo decay_variant() {
  VariantInfo v;
  v.name = kName;
  v.summary = "learned linear distance penalty per layer and head (a test's throw-away)";
  v.parameters = ParamScope::PerLayer;
  v.eval_keys = {{"cap", ""}};
  v.exports = {"slopes"};
  v.make_params = [] { return std::make_shared<DecayParams>(); };
  v.validate = [](const VariantParams& vp, const Config&, const ParamCheck& c) {
    const auto& p = static_cast<const DecayParams&>(vp);
    if (p.slope < 0) c.fail("slope", "out of range", fmt::format("{}", p.slope), ">= 0");
  };
  v.make = [](const ModelDims& d, const VariantParams& p, const PositionConfig&) {
    return std::make_shared<DecayImpl>(d, static_cast<const DecayParams&>(p));
  };
  return v;
}

// ---- (3) Its YAML overlay, (5) its schema row -------------------------------------------------
const char* const kOverlay =
    "# test_decay with a steeper start\n"
    "position:\n"
    "  type: test_decay\n"
    "  test_decay:\n"
    "    slope: 0.2\n";
// The row docs/hdf5-schema.md's table "Position tensors by variant" would get.
const char* const kSchemaRow = "| `test_decay` | `slopes` | Lp × H | `layer,head` | w per layer and head |";

std::string write_overlay(const TempFolder& dir) {
  const std::string path = dir.str("test_decay.yaml");
  std::ofstream(path) << kOverlay;
  return path;
}

std::vector<std::string> small_model() {
  return {"model.width=16", "model.heads=2", "model.layers=2", "model.ff_width=32",
          "model.dropout=0", "model.attention_dropout=0", "task.seq_len=12"};
}

}  // namespace

TEST_CASE("recipe: a throw-away variant is configured, validated and built like a registered one") {
  const ScopedVariant registered(decay_variant());  // (2) the registry line
  const auto names = Registry::get().names();
  CHECK(std::find(names.begin(), names.end(), kName) != names.end());
  TempFolder dir("recipe_config");
  const std::string overlay = write_overlay(dir);

  const Config cfg = load_config({config_path("base.yaml"), overlay}, small_model()).config;
  CHECK(cfg.position.types == std::vector<std::string>{kName});
  CHECK(static_cast<const DecayParams&>(cfg.position.params_of(kName)).slope == 0.2);
  // The written config states it, and reads back the same.
  CHECK(to_yaml(parse_config(YAML::Load(to_yaml(cfg)), nullptr)) == to_yaml(cfg));

  // Its parameter struct rejects what it does not declare; its validator runs.
  auto message = [&](const std::vector<std::string>& sets) {
    std::vector<std::string> all = small_model();
    all.insert(all.end(), sets.begin(), sets.end());
    try {
      load_config({config_path("base.yaml"), overlay}, all);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message({"position.test_decay.width=3"}).find(
            "position.test_decay.width: unknown key") != std::string::npos);
  CHECK(message({"position.test_decay.slope=-1"}).find(
            "position.test_decay.slope: out of range (got -1; expected >= 0)") !=
        std::string::npos);

  // Built in both modes; seeded determinism; its parameters per layer set, in the model.
  for (const char* mode : {"encoder", "decoder"}) {
    CAPTURE(mode);
    std::vector<std::string> sets = small_model();
    sets.push_back(std::string("model.mode=") + mode);
    sets.push_back(std::string("task.type=") + (mode == std::string("encoder") ? "mlm" : "clm"));
    const Config c = load_config({config_path("base.yaml"), overlay}, sets).config;
    auto tokens = torch::randint(0, 40, {2, 12}, torch::kLong);  // (B,T)
    torch::manual_seed(3);
    Model a(c, 40);
    torch::manual_seed(3);
    Model b(c, 40);
    auto ya = a->lm_logits(a->hidden(tokens));  // (B,T,V)
    CHECK(torch::isfinite(ya).all().item<bool>());
    CHECK(torch::equal(ya, b->lm_logits(b->hidden(tokens))));
    int64_t in_model = 0;
    for (const auto& p : a->named_parameters())
      if (p.key().rfind("transformer.position.", 0) == 0) in_model += p.value().numel();
    CHECK(in_model == 2 * 2);  // per layer: H = 2 slopes; 2 layers
  }
}

TEST_CASE("recipe: the throw-away variant against a naive loop of its formula") {  // (4)
  const ScopedVariant registered(decay_variant());
  for (bool causal : {false, true})
    for (int64_t cap : {0, 2}) {
      CAPTURE(causal);
      CAPTURE(cap);
      const int64_t B = 2, H = 2, d = 3, T = 6;
      torch::manual_seed(11);
      const ModelDims dims = tiny_dims(H, d, causal);
      MultiHeadAttention attn(dims.width, H, 0.0);
      attn->to(torch::kDouble);
      randomize(*attn, 0.5);
      auto enc = make_variant(kName, dims, "{slope: 0.3, cap: " + std::to_string(cap) + "}");
      enc->to(torch::kDouble);
      randomize(*enc, 1.0);
      auto x = torch::randn({B, T, dims.width}, torch::kDouble);  // (B,T,D)
      AttentionContext ctx;
      ctx.layer = 1;
      ctx.length = T;
      ctx.causal = causal;
      AttentionRecord rec;
      torch::Tensor y;
      {
        torch::NoGradGuard guard;
        y = attn->forward(x, ctx, {enc}, {}, &rec);  // (B,T,D)
      }
      NaiveHeads heads{naive_heads(x, attn->query, H), naive_heads(x, attn->key, H),
                       naive_heads(x, attn->value, H)};
      const auto w = enc->named_parameters()["w"].detach();  // (Lp,H)
      const double rsd = 1.0 / std::sqrt(static_cast<double>(d));
      auto score = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
        double dot = 0;
        for (int64_t m = 0; m < d; ++m) dot += el(heads.q, b, h, i, m) * el(heads.k, b, h, j, m);
        double dist = std::abs(static_cast<double>(j - i));
        if (cap > 0) dist = std::min(dist, static_cast<double>(cap));
        return dot * rsd - el(w, 1, h) * dist;
      };
      const auto naive = naive_attend(heads, *attn, causal, score, {});
      CHECK(max_abs_diff(rec.probs, naive.probs) < 1e-10);
      CHECK(max_abs_diff(y, naive.out) < 1e-10);
    }
}

TEST_CASE("recipe: the throw-away variant trains, is recorded, analysed, benched and evaluated") {
  const ScopedVariant registered(decay_variant());
  TempFolder dir("recipe_train");
  std::vector<std::string> sets = tiny_run(dir.str("cache"), 10);
  sets.push_back(std::string("position.type=") + kName);
  train_here(sets, dir.str("run"));

  // run.h5: its datasets in the snapshots, and its positional parameter count.
  auto reader = RunFileReader::open(dir.str("run/run.h5"));
  CHECK(reader->root_attribute(schema::kAttrPositionTypes) == kName);
  CHECK(reader->attribute("/", schema::kAttrPositionalParameters) == "4");  // Lp·H = 2·2
  const NamedTensor slopes = reader->dataset(schema::position_path(10, kName, "slopes"));
  CHECK(slopes.value.sizes() == torch::IntArrayRef({2, 2}));
  CHECK(slopes.dims == std::vector<std::string>{"layer", "head"});
  // (5) The schema row names what it exports, with the same axes.
  std::istringstream row(kSchemaRow);
  std::vector<std::string> cells;
  for (std::string c; std::getline(row, c, '|');) cells.push_back(c);
  REQUIRE(cells.size() >= 5);
  CHECK(cells[2].find("`slopes`") != std::string::npos);
  CHECK(cells[4].find("`layer,head`") != std::string::npos);

  // The analysis reads it like any run: its count, and its position-only scores' invariance
  // (a function of j - i only: 1).
  analysis::AnalyzeOptions o;
  o.figures = false;
  const auto result = analysis::analyze_folder(dir.str("run"), o, {}, nullptr);
  REQUIRE(result.runs.size() == 1);
  const auto& run = result.runs.front();
  CHECK(run.info.positional_parameters == 4);
  CHECK(run.info.position_types == kName);
  const auto scores = run.invariance.find(std::string("scores:") + kName);
  REQUIRE(scores != run.invariance.end());
  REQUIRE(scores->second.size() == run.steps.size());
  for (double v : scores->second) CHECK(v == doctest::Approx(1.0).epsilon(1e-6));

  // bench plans it like a registered variant (no direct path declared: no direct column);
  // eval accepts its evaluation key.
  BenchPlan plan;
  plan.variants = {kName};
  plan.lengths = {64};
  const auto cases = plan_cases(plan);
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].variant == Registry::get().baseline());
  CHECK(cases[1].variant == kName);
  CHECK(default_direct_variants({kName}).empty());
  CHECK_FALSE(has_direct_path(kName));
  const auto keys = eval_settings();
  CHECK(std::find(keys.begin(), keys.end(), "position.test_decay.cap") != keys.end());
}

TEST_CASE("recipe: a variant leaves the registry with its scope, and a second one with its name is refused") {
  {
    const ScopedVariant registered(decay_variant());
    CHECK(Registry::get().find(kName) != nullptr);
    auto again = [] { const ScopedVariant twice{decay_variant()}; };
    CHECK_THROWS_WITH_AS(again(), "position variant registered twice: test_decay",
                         std::logic_error);
  }
  CHECK(Registry::get().find(kName) == nullptr);
}

TEST_CASE(
    "recipe: the extrapolation experiment evaluates past a length bound as the registry says") {
  // A throw-away variant whose `cap` runs past its bound when set to `wrap`, and `learned`, whose
  // `beyond: clamp` does: each run not trained with that value is listed under the setting.
  VariantInfo v = decay_variant();
  v.eval_keys = {{"cap", "wrap"}};
  v.past_label = "wrapped";
  const ScopedVariant registered(v);
  TempFolder tmp("recipe_past_bound");
  auto run = [&](const std::string& name, const std::string& position) {
    const std::string dir = tmp.str(name);
    fs::create_directories(dir);
    std::ofstream(fs::path(dir) / "config.yaml") << "seed: 1\nposition:\n" << position;
    return dir;
  };
  const std::string learned = run("learned", "  type: learned\n  learned:\n    beyond: error\n");
  const std::string clamped = run("clamped", "  type: learned\n  learned:\n    beyond: clamp\n");
  const std::string none = run("none", "  type: none\n");
  const std::string stack =
      run("stack",
          "  type: learned+test_decay\n  learned:\n    beyond: error\n  test_decay:\n"
          "    cap: none\n");
  const auto got = past_bound_evaluations({learned, clamped, none, stack});
  using Group = std::pair<std::string, std::vector<std::string>>;
  const std::map<std::string, Group> expected = {
      {"position.learned.beyond=clamp", {"clamped", {learned, stack}}},
      {"position.test_decay.cap=wrap", {"wrapped", {stack}}}};
  CHECK(got == expected);
}
