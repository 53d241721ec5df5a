// What a run keeps on record beside its metrics: the data split (split.json, run.h5's /split),
// what --init-from loaded (run.h5's /init_from, result.json), why training stopped, and the
// learning rate the trainer applied. Expected values come from the fixture's layout, the
// documented split rule and the documented schedule, not from the trainer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "core/data/split.h"
#include "core/io/run_file.h"
#include "core/io/schema.h"
#include "core/train/trainer.h"
#include "tests/helpers.h"
#include "tests/tiny_run.h"
#include "tests/text_file.h"

using namespace relpos;
using namespace relpos::test;

namespace {

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> json_strings(const nlohmann::json& j) {
  return j.get<std::vector<std::string>>();
}

// tiny_run on tests/fixtures/trainer/split_corpus.txt: 25 one-line documents separated by blank
// lines (document i on line 2i+1, so the text loader names it "line <2i+1>"), none cut into
// pieces (20 or more documents).
std::vector<std::string> split_run(const std::string& cache, int64_t steps = 2) {
  auto sets = tiny_run(cache, steps);
  sets.insert(sets.end(), {"data.corpus=" + fixture_path("trainer/split_corpus.txt"),
                           "snapshots.every_percent=0"});
  return sets;
}

}  // namespace

TEST_CASE("the data split is on record in split.json and run.h5, as the split rule says") {
  TempFolder tmp("split_record");
  const std::string cache = tmp.str("cache");
  auto a_sets = split_run(cache);
  REQUIRE(train_here(a_sets, tmp.str("a")).finished);

  // The documented rule for 25 unlabelled documents, valid_fraction = test_fraction = 0.2:
  // round(25·0.2) = 5 to test, 5 to valid, 15 to train; every id once; ascending.
  const auto j = test::read_json(tmp.str("a/split.json"));
  CHECK(j.at("split_seed") == 1234);  // configs/base.yaml's data.split_seed
  CHECK(j.at("corpus") == fixture_path("trainer/split_corpus.txt"));
  const std::map<std::string, size_t> expected_counts = {{"train", 15}, {"valid", 5}, {"test", 5}};
  std::set<int64_t> all;
  for (const auto& [split, count] : expected_counts) {
    CAPTURE(split);
    const auto ids = j.at(split).at("ids").get<std::vector<int64_t>>();
    const auto names = json_strings(j.at(split).at("names"));
    CHECK(j.at(split).at("count") == count);
    CHECK(ids.size() == count);
    CHECK(std::is_sorted(ids.begin(), ids.end()));
    REQUIRE(names.size() == ids.size());
    for (size_t k = 0; k < ids.size(); ++k) {
      CHECK(all.insert(ids[k]).second);
      CHECK(names[k] == "line " + std::to_string(2 * ids[k] + 1));
    }
  }
  CHECK(all.size() == 25);
  CHECK(*all.rbegin() == 24);
  // ... and it is the split that split_corpus's documented function makes for that seed.
  const DocumentSplit s = make_document_split(25, nullptr, 0.2, 0.2, 1234, "fixture");
  CHECK(j.at("train").at("ids").get<std::vector<int64_t>>() == s.train);
  CHECK(j.at("valid").at("ids").get<std::vector<int64_t>>() == s.valid);
  CHECK(j.at("test").at("ids").get<std::vector<int64_t>>() == s.test);

  // run.h5 holds the same record.
  {
    auto f = RunFileReader::open(run_h5_path(tmp.str("a")));
    CHECK(f->attribute(schema::kSplit, schema::kAttrSplitSeed) == "1234");
    for (const auto& [split, count] : expected_counts) {
      CAPTURE(split);
      const NamedTensor ids = f->dataset(schema::split_ids_path(split));
      CHECK(ids.dims == std::vector<std::string>{"document"});
      const auto want = j.at(split).at("ids").get<std::vector<int64_t>>();
      REQUIRE(ids.value.numel() == static_cast<int64_t>(want.size()));
      for (size_t k = 0; k < want.size(); ++k) CHECK(ids.value[k].item<int64_t>() == want[k]);
      CHECK(f->strings(schema::split_names_path(split)) == json_strings(j.at(split).at("names")));
    }
  }

  // Another variant and another seed, the same data.split_seed: the same split, byte for byte.
  auto b_sets = split_run(cache);
  b_sets.insert(b_sets.end(), {"position.type=alibi", "seed=7"});
  REQUIRE(train_here(b_sets, tmp.str("b")).finished);
  CHECK(read_text(tmp.str("b/split.json")) == read_text(tmp.str("a/split.json")));
  // Another data.split_seed: another split (so the equality above is not trivial).
  auto c_sets = split_run(cache);
  c_sets.push_back("data.split_seed=2");
  REQUIRE(train_here(c_sets, tmp.str("c")).finished);
  const auto c = test::read_json(tmp.str("c/split.json"));
  CHECK(c.at("split_seed") == 2);
  CHECK(c.at("test").at("ids") != j.at("test").at("ids"));
}

TEST_CASE("--init-from with a variant switch records what was loaded and what is new") {
  TempFolder tmp("init_record");
  const std::string cache = tmp.str("cache");
  // Pre-training: learned (table of 64 rows) + tisa.
  auto pre_sets = tiny_run(cache, 4);
  pre_sets.insert(pre_sets.end(), {"position.learned.max_len=64", "snapshots.every_percent=0"});
  REQUIRE(train_here(pre_sets, tmp.str("pre")).finished);
  // The drop-in: learned (32 rows: another shape) + huang_m4 (new), tisa dropped. lr 0 keeps the
  // loaded values as they were loaded, so the final weights can be compared with the source's.
  auto ft_sets = tiny_run(cache, 4);
  ft_sets.insert(ft_sets.end(), {"position.type=learned+huang_m4", "position.learned.max_len=32",
                                 "train.lr=0", "snapshots.every_percent=0"});
  TrainOptions o;
  o.out_dir = tmp.str("ft");
  o.quiet = true;
  o.init_from = tmp.str("pre");
  o.stop_after = 2;  // interrupted, then resumed: the record must survive the resume
  REQUIRE_FALSE(train(load_config({config_path("base.yaml")}, ft_sets), o).finished);
  o.stop_after = 0;
  o.init_from.clear();
  o.resume = true;
  REQUIRE(train(load_run_config(o.out_dir), o).finished);

  const std::vector<std::string> new_params = {"transformer.position.huang_m4.table",
                                               "transformer.position.learned.table"};
  const std::vector<std::string> reshaped = {"transformer.position.learned.table"};
  const std::vector<std::string> dropped = {
      "transformer.position.tisa.a", "transformer.position.tisa.b", "transformer.position.tisa.c"};
  auto pre = RunFileReader::open(run_h5_path(tmp.str("pre")));
  auto ft = RunFileReader::open(run_h5_path(o.out_dir));
  // Loaded: every parameter the two models share by name, except the reshaped table (the
  // weights each run wrote, an independent listing of the two models' parameters).
  std::vector<std::string> shared;
  const auto pre_names = pre->children(schema::kWeights);
  for (const auto& name : ft->children(schema::kWeights))
    if (std::count(pre_names.begin(), pre_names.end(), name) && name != reshaped[0])
      shared.push_back(name);
  REQUIRE(shared.size() > 10);  // embeddings, attention, feed-forward, norms, head

  CHECK(ft->attribute(schema::kInitFrom, schema::kAttrInitSource) == tmp.str("pre"));
  CHECK(sorted(ft->strings(schema::init_from_path(schema::kInitLoaded))) == sorted(shared));
  CHECK(sorted(ft->strings(schema::init_from_path(schema::kInitInitialised))) == new_params);
  CHECK(ft->strings(schema::init_from_path(schema::kInitShapeMismatched)) == reshaped);
  CHECK(ft->strings(schema::init_from_path(schema::kInitUnused)) == dropped);
  CHECK(ft->attribute(schema::init_from_path(schema::kInitLoaded), schema::kAttrDims) ==
        "parameter");
  // The loaded values are the source's (lr 0: the fine-tune did not move them).
  for (const auto& name : shared) {
    CAPTURE(name);
    CHECK(torch::equal(ft->dataset(schema::weight_path(name)).value,
                       pre->dataset(schema::weight_path(name)).value));
  }
  // result.json says the same, after the resume too.
  const auto r = test::read_json(run_result_path(o.out_dir));
  CHECK(r.at("init_from") == tmp.str("pre"));
  const auto& p = r.at("init_from_parameters");
  CHECK(sorted(json_strings(p.at("loaded"))) == sorted(shared));
  CHECK(sorted(json_strings(p.at("initialised"))) == new_params);
  CHECK(json_strings(p.at("shape_mismatched")) == reshaped);
  CHECK(json_strings(p.at("unused")) == dropped);
  // A run that did not start from another has no such record.
  CHECK_FALSE(pre->exists(schema::kInitFrom));
  CHECK_FALSE(test::read_json(run_result_path(tmp.str("pre"))).contains("init_from"));
}

TEST_CASE(
    "early stop: stops after train.early_stop evaluations without improvement, and says why") {
  TempFolder tmp("early_stop");
  // lr 0: the parameters never move, so every validation gives the same accuracy; the first
  // evaluation (step 2) is the best, and steps 4, 6, 8 are three without a better one.
  auto sets = tiny_run(tmp.str("cache"), 40);
  sets.insert(sets.end(), {"train.lr=0", "train.eval_every=2", "train.early_stop=3",
                           "train.checkpoint_every=100", "snapshots.every_percent=0"});
  const std::string dir = tmp.str("r");
  const TrainResult res = train_here(sets, dir);
  CHECK(res.finished);
  CHECK(res.stopped_early);
  CHECK(res.steps == 8);
  const auto acc = logged(dir, "valid_accuracy");
  REQUIRE(acc.size() == 4);
  for (size_t k = 0; k < acc.size(); ++k) {
    CHECK(acc[k].first == static_cast<int64_t>(2 * (k + 1)));
    CHECK(acc[k].second == acc[0].second);
  }
  CHECK(logged(dir, "train_loss").back().first == 8);  // nothing logged after the stop

  const auto r = test::read_json(run_result_path(dir));
  CHECK(r.at("steps") == 8);
  CHECK(r.at("stopped_early") == true);
  CHECK(r.at("early_stop").at("metric") == "accuracy");
  CHECK(r.at("early_stop").at("evaluations_without_improvement") == 3);
  CHECK(r.at("early_stop").at("best").get<double>() == doctest::Approx(acc[0].second));
  CHECK(r.at("stop_reason")
            .get<std::string>()
            .rfind("early stop at step 8: valid accuracy not better than its best", 0) == 0);
  // The stop step gets a checkpoint, a snapshot (the only one here) and the final weights.
  CHECK(load_saved(dir).state.step == 8);
  auto f = RunFileReader::open(run_h5_path(dir));
  CHECK(f->snapshot_steps() == std::vector<int64_t>{8});
  CHECK(f->attribute(schema::kWeights, schema::kAttrStep) == "8");

  // Without early stop the same run goes on to train.steps, and says so.
  auto full = tiny_run(tmp.str("cache"), 6);
  full.insert(full.end(), {"train.lr=0", "train.eval_every=2", "snapshots.every_percent=0"});
  REQUIRE(train_here(full, tmp.str("full")).steps == 6);
  const auto rf = test::read_json(run_result_path(tmp.str("full")));
  CHECK(rf.at("stopped_early") == false);
  CHECK(rf.at("stop_reason") == "reached train.steps (6)");
  CHECK_FALSE(rf.contains("early_stop"));
}

TEST_CASE("the trainer applies the documented learning-rate schedule at every step") {
  TempFolder tmp("lr_log");
  // 20 steps, warm-up 0.1 -> W = 2, peak 0.002. Step k (1-based) uses the lr of schedule step
  // k−1: 0.002·k/2 for k ≤ 2, then 0.002·(20−(k−1))/18.
  auto sets = tiny_run(tmp.str("cache"), 20);
  sets.insert(sets.end(), {"train.lr=0.002", "train.warmup=0.1", "snapshots.every_percent=0"});
  REQUIRE(train_here(sets, tmp.str("r")).finished);
  const auto lr = logged(tmp.str("r"), "lr");
  REQUIRE(lr.size() == 20);
  for (const auto& [k, value] : lr) {
    CAPTURE(k);
    const double want = k <= 2 ? 0.002 * k / 2.0 : 0.002 * (20.0 - (k - 1)) / 18.0;
    CHECK(value == doctest::Approx(want).epsilon(1e-12));
  }
}
