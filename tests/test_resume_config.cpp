// `relpos train --resume DIR --config X`: the command that started a run, repeated with
// --resume, continues it when X (with the --set options) gives the run's config; another config
// is refused with every key that differs and both values (it used to be refused outright:
// "drop --config").
#include <doctest/doctest.h>

#include <fstream>
#include <tuple>

#include "core/util/errors.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;

TEST_CASE("train --resume with --config: the same config continues the run, another names each "
          "differing key") {
  TempFolder tmp("resume_config");
  const std::string dir = tmp.str("run");
  const auto sets = tiny_run(tmp.str("cache"), 4);
  auto [code, out] = run_relpos(train_args(sets, dir), tmp.str("first.log"));
  REQUIRE_MESSAGE(code == 0, out);

  // The same command with --resume and more steps: accepted, and the run goes on to step 6.
  auto again = train_args(sets, dir);
  again.insert(again.end(), {"--resume", "--set", "train.steps=6"});
  std::tie(code, out) = run_relpos(again, tmp.str("again.log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(contains(out, "finished 6 steps"), out);
  CHECK(load_saved(dir).state.step == 6);

  // A config that differs in two keys, one from a --config file, one left out of --set:
  // refused, naming both with the run's and the given value.
  const std::string overlay = tmp.str("wider.yaml");
  std::ofstream(overlay) << "model:\n  ff_width: 48\n";
  std::vector<std::string> refused{"train", "--config", config_path("base.yaml"), "--config",
                                   overlay, "--out", dir, "--quiet", "--resume"};
  for (const auto& s : sets)
    if (s.rfind("data.valid_fraction=", 0) != 0 && s.rfind("model.ff_width=", 0) != 0)
      refused.insert(refused.end(), {"--set", s});
  refused.insert(refused.end(), {"--set", "train.steps=8"});
  std::tie(code, out) = run_relpos(refused, tmp.str("refused.log"));
  CHECK_MESSAGE(code == 2, out);
  CHECK_MESSAGE(contains(out, "gives another config than the run's"), out);
  CHECK_MESSAGE(contains(out, "data.valid_fraction: 0.2 -> 0.05"), out);
  CHECK_MESSAGE(contains(out, "model.ff_width: 64 -> 48"), out);
  CHECK_MESSAGE(!contains(out, "train.steps:"), out);  // --set applies to both sides
  CHECK_MESSAGE(contains(out, "hint: drop --config to continue with the run's own config"), out);
  CHECK(load_saved(dir).state.step == 6);  // nothing trained

  // In-process: without --config there is nothing to compare.
  CHECK(resume_run_config(dir, {}, {"train.steps=8"}).config.train.steps == 8);
  CHECK_THROWS_AS(resume_run_config(dir, {config_path("base.yaml")}, {}), ConfigError);
}
