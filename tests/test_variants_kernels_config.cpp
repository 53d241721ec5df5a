// Config errors of the variants and options added with issue 28 (deberta, kerple_log,
// kerple_power, fire, xpos, cope; position.randomized_max; per_head for shaw and huang_m4):
// each bad value gives a ConfigError naming the key, what was wrong, what was expected, and
// (from a file) the file, line and column.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/util/errors.h"
#include "tests/helpers.h"
#include "tests/tiny_run.h"

using namespace relpos;

namespace {

Config load_recent(const std::vector<std::string>& sets) {
  return load_config({test::config_path("base.yaml")}, sets).config;
}

std::string recent_config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError thrown>";
}

}  // namespace

TEST_CASE("config: the rules of deberta, kerple, fire, xpos, cope and per_head") {
  struct Case {
    std::vector<std::string> sets;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"position.type=deberta", "position.deberta.clip=0"},
       "position.deberta.clip: out of range (got 0; expected >= 1)"},
      {{"position.type=deberta", "position.deberta.bucketing=log", "position.deberta.clip=1"},
       "position.deberta.clip: out of range (got 1; expected >= 2 with bucketing: log)"},
      {{"position.type=deberta", "position.deberta.bucketing=log", "position.deberta.clip=64",
        "position.deberta.max_distance=64"},
       "position.deberta.max_distance: log buckets need a maximum distance beyond the bucket "
       "span (got 64; expected > clip (64))"},
      {{"position.type=deberta", "position.deberta.bucketing=t5"},
       "position.deberta.bucketing: unknown value (got 't5'; expected one of clip | log)"},
      {{"position.type=kerple_log", "position.kerple_log.a=1"},
       "position.kerple_log.a: unknown key"},
      {{"position.type=fire", "position.fire.mlp_width=0"},
       "position.fire.mlp_width: out of range (got 0; expected >= 1)"},
      {{"position.type=fire", "position.fire.init_c=0"},
       "position.fire.init_c: out of range (got 0.000000; expected > 0)"},
      {{"position.type=fire", "position.fire.init_threshold=-1"},
       "position.fire.init_threshold: out of range (got -1.000000; expected >= 0)"},
      {{"position.type=xpos", "position.xpos.rotary_dim=3"},
       "position.xpos.rotary_dim: rotary width must be even and at most the head width (got 3; "
       "expected 0 (= d) or an even number <= 32)"},
      {{"position.type=xpos", "position.xpos.scale_base=0"},
       "position.xpos.scale_base: out of range (got 0.000000; expected > 0)"},
      {{"position.type=xpos", "position.xpos.zeta_offset=-0.4"},
       "position.xpos.zeta_offset: out of range (got -0.400000; expected > 0)"},
      {{"position.type=xpos", "position.xpos.base=1"}, "position.xpos.base: out of range"},
      {{"position.type=xpos", "position.xpos.block_size=-1"},
       "position.xpos.block_size: out of range (got -1; expected >= 0 (0 = off))"},
      {{"position.type=xpos", "position.xpos.block_size=256"},
       "position.xpos.block_size: blockwise causal attention needs a causal model (got 256 with "
       "model.mode encoder; expected 0 for an encoder, or model.mode: decoder)"},
      {{"position.type=xpos", "model.mode=decoder", "task.type=clm",
        "position.xpos.block_size=64"},
       "position.xpos.block_size: the window is shorter than the training sequences (got 64; "
       "expected >= task.seq_len (128))"},
      {{"position.type=xpos", "model.mode=decoder", "task.type=clm",
        "position.xpos.block_size=128", "snapshots.probe_len=256"},
       "position.xpos.block_size: the window is shorter than the snapshot probe sequences (got "
       "128; expected >= snapshots.probe_len (256))"},
      {{"position.type=cope", "position.cope.n_pos=1"},
       "position.cope.n_pos: out of range (got 1; expected >= 2)"},
      {{"position.type=shaw", "position.shaw.per_head=maybe"}, "position.shaw.per_head: wrong type"},
      {{"position.type=huang_m3", "position.huang_m3.per_head=true"},
       "position.huang_m3.per_head: unknown key"},
      {{"position.type=huang", "position.huang.per_head=true"},
       "position.huang.per_head: unknown key"},
      {{"position.type=rope", "position.randomized_max=100"},
       "position.randomized_max: randomized positions need at least as many positions as a "
       "training sequence (got 100; expected 0 (off) or >= task.seq_len (128))"},
      {{"position.type=rope", "position.randomized_max=-5"},
       "position.randomized_max: randomized positions need at least as many positions"},
      {{"position.type=alibi+tisa", "position.randomized_max=512"},
       "position.randomized_max: no encoding in position.type reads absolute positions, so there "
       "is nothing to randomize (got 512 with position.type alibi+tisa; expected 0, or a stack "
       "with an absolute or rotary encoding; known: sinusoidal, learned, rope, xpos)"},
      {{"position.type=learned", "position.learned.max_len=256", "position.randomized_max=512"},
       "position.learned.max_len: the learned table is shorter than the randomized training "
       "positions (got 256; expected >= position.randomized_max (512))"},
      {{"position.randomized_max=lots"}, "position.randomized_max: wrong type"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    const std::string msg = recent_config_error([&] { (void)load_recent(c.sets); });
    CHECK_MESSAGE(msg.find(c.message) != std::string::npos, "got: " << msg);
  }
  // Accepted neighbours.
  CHECK_NOTHROW(load_recent({"position.type=deberta", "position.deberta.bucketing=log",
                             "position.deberta.clip=64", "position.deberta.max_distance=65"}));
  CHECK_NOTHROW(load_recent({"position.type=xpos", "model.mode=decoder", "task.type=clm",
                             "position.xpos.block_size=128"}));
  CHECK_NOTHROW(load_recent({"position.type=huang_m4", "position.huang_m4.per_head=true"}));
  CHECK_NOTHROW(load_recent({"position.type=shaw", "position.shaw.per_head=true"}));
  CHECK_NOTHROW(load_recent({"position.type=learned+alibi", "position.learned.max_len=512",
                             "position.randomized_max=512"}));
  CHECK_NOTHROW(load_recent({"position.type=rope", "position.randomized_max=128"}));
  // Off by default, and written to the resolved config only when on.
  CHECK(load_recent({}).position.randomized_max == 0);
  CHECK(to_yaml(load_recent({})).find("randomized_max") == std::string::npos);
  CHECK(to_yaml(load_recent({"position.type=rope", "position.randomized_max=256"}))
            .find("randomized_max: 256") != std::string::npos);
}

TEST_CASE("config: a randomized_max error names the file, line and column") {
  test::TempFolder dir("randomized_config");
  const std::string f = dir.str("run.yaml");
  std::ofstream(f) << "position:\n"
                      "  type: alibi\n"
                      "  randomized_max: 512\n";
  const std::string msg = recent_config_error([&] {
    (void)load_config({test::config_path("base.yaml"), f});
  });
  CHECK_MESSAGE(msg.find(f + ":3:3: position.randomized_max: no encoding") != std::string::npos,
                "got: " << msg);
}
