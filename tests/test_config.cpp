// The config system: every error path with a check on its message (file:line:col, key, what was
// found, what was expected), merge order and includes, --set overrides, the resolved-config
// round trip, and the `relpos` binary's exit status on a bad config.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/position/position_registry.h"
#include "core/util/text_util.h"
#include "tests/child_log.h"
#include "tests/helpers.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp dir, removed with everything in it.
struct ConfigTempDir {
  fs::path path;
  ConfigTempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("relpos_cfg_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~ConfigTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = path / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

std::string base() { return test::config_path("base.yaml"); }

Config load(const std::vector<std::string>& sets) { return load_config({base()}, sets).config; }

// The message of the ConfigError `f` throws, or a marker when it throws none.
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError thrown>";
}

// Runs a shell command; returns its exit status and its stdout+stderr (also noted in the
// ChildLog, which a failing test case prints).
std::pair<int, std::string> run_shell(const std::string& cmd) {
  std::string out;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  test::ChildLog::instance().note({cmd}, test::wait_status_text(status), out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

// Every part must appear in the message of the ConfigError that `expr` throws.
#define CHECK_CONFIG_ERROR(expr, ...)                                                        \
  do {                                                                                       \
    const std::string msg_ = config_error([&] { (void)(expr); });                            \
    for (const std::string& part_ : std::initializer_list<std::string>{__VA_ARGS__})         \
      CHECK_MESSAGE(test::contains(msg_, part_), "expected '" << part_ << "' in: " << msg_); \
  } while (0)

TEST_CASE("config: base.yaml mirrors the struct defaults") {
  // Defaults written once, in the structs; base.yaml must list the same values.
  CHECK(to_yaml(Config{}) == to_yaml(load({})));
}

TEST_CASE("config: unknown keys at every level name the file, line, key and the known keys") {
  ConfigTempDir dir;
  const std::string top = dir.write("top.yaml", "seed: 3\nsede: 4\n");
  CHECK_CONFIG_ERROR(load_config({base(), top}), top + ":2:1: sede: unknown key",
                     "known: name, seed, device, threads, cpu_allocator, precision, model, "
                     "position, data, task, train");
  const std::string nested = dir.write("nested.yaml", "model:\n  layers: 2\n  widht: 64\n");
  CHECK_CONFIG_ERROR(load_config({base(), nested}), nested + ":3:3: model.widht: unknown key",
                     "known: mode, layers, width, heads");
  const std::string params =
      dir.write("params.yaml", "position:\n  type: shaw\n  shaw:\n    clip: 4\n    clipp: 5\n");
  CHECK_CONFIG_ERROR(load_config({base(), params}),
                     params + ":5:5: position.shaw.clipp: unknown key", "known: clip, values");
  const std::string pos = dir.write("pos.yaml", "position:\n  typ: shaw\n");
  CHECK_CONFIG_ERROR(load_config({base(), pos}), pos + ":2:3: position.typ: unknown key",
                     "known: type, relative_impl, none, sinusoidal");
  // From the command line the location is the --set itself.
  CHECK_CONFIG_ERROR(load({"train.stpes=4"}),
                     "command line (--set train.stpes=4): train.stpes: unknown key");
  // Also when the unknown key is a section the --set itself creates.
  CHECK_CONFIG_ERROR(load({"snapshot.every_percent=5"}),
                     "command line (--set snapshot.every_percent=5): snapshot: unknown key");
}

TEST_CASE("config: an unknown key, variant or value suggests the nearest known name") {
  ConfigTempDir dir;
  // Each misspelling with the name it should suggest; the known lists stay in the message.
  CHECK_CONFIG_ERROR(load({"train.stpes=4"}), "train.stpes: unknown key (known: steps,",
                     "; did you mean train.steps?");
  CHECK_CONFIG_ERROR(load({"snapshot.every_percent=5"}), "did you mean snapshots?");
  const std::string nested = dir.write("nested.yaml", "model:\n  layers: 2\n  widht: 64\n");
  CHECK_CONFIG_ERROR(load_config({base(), nested}), nested + ":3:3: model.widht: unknown key",
                     "did you mean model.width?");
  const std::string params =
      dir.write("params.yaml", "position:\n  type: shaw\n  shaw:\n    clipp: 5\n");
  CHECK_CONFIG_ERROR(load_config({base(), params}), "did you mean position.shaw.clip?");
  CHECK_CONFIG_ERROR(load({"position.tisaa.scales=3"}), "position.tisaa: unknown key",
                     "did you mean position.tisa?");
  CHECK_CONFIG_ERROR(load({"position.type=sinusodal"}), "unknown position variant (got 'sinusodal'",
                     "did you mean 'sinusoidal'?");
  CHECK_CONFIG_ERROR(load({"position.type=learned+rop"}), "got 'rop'", "did you mean 'rope'?");
  CHECK_CONFIG_ERROR(load({"model.norm=psot"}), "model.norm: unknown value (got 'psot'",
                     "did you mean 'post'?");
  CHECK_CONFIG_ERROR(load({"task.type=mlmm"}), "task.type: unknown value (got 'mlmm'",
                     "did you mean 'mlm'?");
  // Nothing near: no suggestion.
  CHECK_FALSE(test::contains(config_error([] { load({"position.type=rotary"}); }), "did you mean"));
  CHECK_FALSE(test::contains(config_error([] { load({"train.schedule=cosine"}); }), "did you mean"));
}

TEST_CASE("config: edit distance and the closest name, against distances counted by hand") {
  CHECK(edit_distance("stpes", "steps") == 1);    // one swap of neighbours
  CHECK(edit_distance("kitten", "sitting") == 3);  // k->s, e->i, +g
  CHECK(edit_distance("ca", "abc") == 3);          // restricted: no edit inside a swapped pair
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("LayerS", "layers") == 0);   // case ignored
  CHECK(edit_distance("widht", "width") == 1);
  CHECK(closest_name("stpes", {"steps", "lr", "batch_size"}) == "steps");
  CHECK(closest_name("lt", {"steps", "lr"}) == "lr");
  CHECK(closest_name("rotary", {"rope", "learned"}).empty());  // 4 edits: too far
  CHECK(closest_name("sinusodal", {"sinusoidal"}) == "sinusoidal");
  CHECK(closest_name("steps", {"steps"}).empty());  // nothing misspelt
}

TEST_CASE("config: seeds outside [0, 2^31 - 1] are refused with file, line and key") {
  ConfigTempDir dir;
  const std::string f = dir.write("seed.yaml", "name: x\nseed: -1\n");
  CHECK_CONFIG_ERROR(load_config({base(), f}),
                     f + ":2:1: seed: out of range (got -1; expected an integer in [0, "
                         "2147483647] (2^31 - 1))");
  CHECK_CONFIG_ERROR(load({"seed=2147483648"}), "seed: out of range (got 2147483648");
  CHECK_CONFIG_ERROR(load({"data.split_seed=-5"}),
                     "command line (--set data.split_seed=-5): data.split_seed: out of range");
  // Both ends of the range are seeds.
  CHECK(load({"seed=0"}).seed == 0);
  CHECK(load({"seed=2147483647", "data.split_seed=0"}).seed == 2147483647);
}

TEST_CASE("config: an unknown variant lists every registered name") {
  const std::string msg = config_error([] { load({"position.type=shawx"}); });
  CHECK(test::contains(msg, "position.type: unknown position variant (got 'shawx'"));
  for (const auto& name : Registry::get().names())
    CHECK_MESSAGE(test::contains(msg, name), name << " missing from: " << msg);
  CHECK_CONFIG_ERROR(load({"position.type=learned+rop"}), "got 'rop'", "known: none,");
}

TEST_CASE("config: values of the wrong type") {
  CHECK_CONFIG_ERROR(load({"model.layers=abc"}),
                     "model.layers: wrong type (got 'abc'; expected an integer)");
  CHECK_CONFIG_ERROR(load({"model.layers=2.5"}), "got '2.5'; expected an integer");
  CHECK_CONFIG_ERROR(load({"model.layers=99999999999999999999"}), "expected an integer");
  CHECK_CONFIG_ERROR(load({"model.layers=[2]"}),
                     "model.layers: wrong type (got a list of 1 items; expected an integer)");
  CHECK_CONFIG_ERROR(load({"model.dropout=lots"}),
                     "model.dropout: wrong type (got 'lots'; expected a finite number)");
  CHECK_CONFIG_ERROR(load({"model.dropout=nan"}), "expected a finite number");
  CHECK_CONFIG_ERROR(load({"model.share_layers=maybe"}),
                     "model.share_layers: wrong type (got 'maybe'; expected true or false)");
  CHECK_CONFIG_ERROR(load({"model.share_layers=1"}), "expected true or false");
  CHECK_CONFIG_ERROR(load({"model.share_layers=yess"}), "(got 'yess'; expected true or false)");
  // YAML's boolean spellings are accepted in any case (regression: TRUE and Yes were errors).
  for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "on", "ON"})
    CHECK(load({std::string("model.share_layers=") + yes}).model.share_layers);
  for (const char* no : {"false", "False", "FALSE", "no", "No", "off", "OFF"})
    CHECK(!load({"model.share_layers=true", std::string("model.share_layers=") + no}).model.share_layers);
  CHECK_CONFIG_ERROR(load({"snapshots.steps=[1, x]"}),
                     "snapshots.steps: wrong type (got 'x'; expected a list of integers)");
  CHECK_CONFIG_ERROR(load({"snapshots.steps={a: 1}"}),
                     "snapshots.steps: wrong type (got a map; expected a list of integers)");
  CHECK_CONFIG_ERROR(load({"snapshots.steps=[[1]]"}), "wrong type of item 0");
  CHECK_CONFIG_ERROR(load({"name=[a]"}), "name: wrong type (got a list of 1 items; expected a string)");
  CHECK_CONFIG_ERROR(load({"model=3"}), "model: wrong type (got '3'; expected a map of keys)");
  CHECK_CONFIG_ERROR(load({"position=shaw"}), "position: wrong type (got 'shaw'; expected a map");
  CHECK_CONFIG_ERROR(load({"position.type={a: 1}"}), "position.type: wrong type (got a map");
  CHECK_CONFIG_ERROR(load({"model.norm=middle"}),
                     "model.norm: unknown value (got 'middle'; expected one of pre | post)");
  CHECK_CONFIG_ERROR(load({"position.relative_impl=slow"}),
                     "position.relative_impl: unknown value (got 'slow'; expected fast | direct)");
  CHECK_CONFIG_ERROR(load({"position.shaw.values=sometimes"}),
                     "position.shaw.values: wrong type (got 'sometimes'; expected true or false)");
  // Strings must be UTF-8 (a Latin-1 byte, a lone continuation byte, in a list too).
  CHECK_CONFIG_ERROR(load({"name=caf\xe9"}),
                     "name: invalid UTF-8 (got byte 0xE9 at byte 3 of the value; expected UTF-8 text)");
  CHECK_CONFIG_ERROR(load({"data.label_names=[ok, \x80x]"}),
                     "data.label_names[1]: invalid UTF-8 (got byte 0x80 at byte 0");
  CHECK(load({"name=caf\xc3\xa9"}).name == "caf\xc3\xa9");
}

TEST_CASE("config: files that cannot be read") {
  ConfigTempDir dir;
  const std::string missing = (dir.path / "nothere.yaml").string();
  CHECK_CONFIG_ERROR(load_config({missing}), missing + ": cannot open config file");
  // Regression: a folder opened as an empty config, so `-c configs/position` did nothing.
  CHECK_CONFIG_ERROR(load_config({dir.path.string()}),
                     dir.path.string() + ": is a folder, not a config file");
  // A FIFO would block the open until a writer came; a device would never end.
  const std::string fifo = (dir.path / "fifo.yaml").string();
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_CONFIG_ERROR(load_config({fifo}),
                     fifo + ": not a regular file (a FIFO; expected a YAML config file)");
  CHECK_CONFIG_ERROR(load_config({"/dev/zero"}),
                     "/dev/zero: not a regular file (a character device; expected a YAML");

  const std::string bad = dir.write("bad.yaml", "seed: 1\nmodel:\n  layers: 2\n   width: 3\n");
  CHECK_CONFIG_ERROR(load_config({bad}), bad + ":4:", "malformed YAML");
  const std::string bad2 = dir.write("bad2.yaml", "seed: 1\nsnapshots:\n  steps: [1, 2\n");
  CHECK_CONFIG_ERROR(load_config({bad2}), bad2 + ":", "malformed YAML");
  const std::string list = dir.write("list.yaml", "- a\n- b\n");
  CHECK_CONFIG_ERROR(load_config({list}), list + ": a config file must be a map of keys",
                     "got a list of 2 items");
  // Regression: a repeated key was silently resolved to its last value.
  const std::string dup = dir.write("dup.yaml", "seed: 1\nmodel:\n  layers: 2\nseed: 2\n");
  CHECK_CONFIG_ERROR(load_config({dup}), dup + ":4:1: seed: duplicate key (first at line 1)");
  const std::string dup2 = dir.write("dup2.yaml", "model:\n  layers: 2\n  width: 8\n  layers: 3\n");
  CHECK_CONFIG_ERROR(load_config({dup2}), dup2 + ":4:3: model.layers: duplicate key");
}

// Issue 29: nine anchors, each a list of nine aliases of the previous one, describe 9^9 values
// in under 500 bytes; the expansion used to take 40-120 s before the config was rejected.
TEST_CASE("config: nested YAML aliases are refused before they are expanded") {
  ConfigTempDir dir;
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) yaml += (k ? ", *a" : "*a") + std::to_string(i - 1);
    yaml += "]\n";
  }
  yaml += "model: *a8\n";
  const std::string bomb = dir.write("laughs.yaml", yaml);
  CHECK_CONFIG_ERROR(load_config({bomb}),
                     bomb + ": the YAML expands to more than 100000 values");
  std::string set = "model.layers=[";
  std::string inner = "&b0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]";
  for (int i = 1; i < 6; ++i) {
    std::string next = "&b" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) next += (k ? ", *b" : "*b") + std::to_string(i - 1);
    inner += ", " + next + "]";
  }
  set += inner + "]";
  CHECK_CONFIG_ERROR(load_config({base()}, std::vector<std::string>{set}),
                     "--set model.layers=", "expands to more than 100000 values");
  // A config with ordinary aliases (a few reuses) still loads.
  const std::string fine = dir.write(
      "fine.yaml", "defaults: &d {layers: 3}\nmodel: *d\n");
  CHECK_CONFIG_ERROR(load_config({fine}), "defaults: unknown key");
}

TEST_CASE("config: includes") {
  ConfigTempDir dir;
  dir.write("common.yaml", "model:\n  layers: 3\n  width: 64\n");
  const std::string top = dir.write("top.yaml", "include: [common.yaml]\nmodel:\n  layers: 5\n");
  auto loaded = load_config({base(), top});
  CHECK(loaded.config.model.layers == 5);  // the including file is merged after its includes
  CHECK(loaded.config.model.width == 64);
  CHECK(loaded.config.model.heads == 4);   // from base.yaml
  REQUIRE(loaded.files.size() == 3);
  CHECK(loaded.files[1] == (dir.path / "common.yaml").string());
  CHECK(loaded.sources.describe("model.width") == (dir.path / "common.yaml").string() + ":3:3");
  CHECK(loaded.sources.describe("model.layers") == top + ":3:3");

  // Regression: the error named only the missing file, not the file and line that include it.
  const std::string inc_missing = dir.write("inc_missing.yaml", "seed: 2\ninclude: [nope.yaml]\n");
  CHECK_CONFIG_ERROR(load_config({inc_missing}), inc_missing + ":2:11: include: cannot open",
                     (dir.path / "nope.yaml").string());

  fs::create_directories(dir.path / "sub");
  const std::string inc_dir = dir.write("inc_dir.yaml", "include: sub\n");
  CHECK_CONFIG_ERROR(load_config({inc_dir}), inc_dir + ":1:10: include: cannot open");

  const std::string a = dir.write("a.yaml", "include: b.yaml\n");
  dir.write("b.yaml", "include: [c.yaml]\n");
  dir.write("c.yaml", "include: [a.yaml]\n");
  CHECK_CONFIG_ERROR(load_config({a}), (dir.path / "c.yaml").string() + ":1:11: include cycle:",
                     "a.yaml -> " + (fs::weakly_canonical(dir.path) / "b.yaml").string(),
                     "c.yaml -> " + (fs::weakly_canonical(dir.path) / "a.yaml").string());
  const std::string self = dir.write("self.yaml", "include: self.yaml\n");
  CHECK_CONFIG_ERROR(load_config({self}), "include cycle");
  const std::string bad = dir.write("badinc.yaml", "include: {a: 1}\n");
  CHECK_CONFIG_ERROR(load_config({bad}), bad + ":1:10: include: expected a file path");

  // The same file reached twice without a cycle (a diamond) is fine.
  dir.write("left.yaml", "include: common.yaml\n");
  dir.write("right.yaml", "include: common.yaml\n");
  const std::string diamond = dir.write("diamond.yaml", "include: [left.yaml, right.yaml]\n");
  CHECK(load_config({base(), diamond}).config.model.layers == 3);
}

TEST_CASE("config: each cross-field and range rule of validate()") {
  struct Case {
    std::vector<std::string> sets;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"model.layers=0"}, "model.layers: out of range (got 0; expected >= 1)"},
      {{"model.width=0"}, "model.width: out of range (got 0; expected >= 1)"},
      {{"model.heads=0"}, "model.heads: out of range (got 0; expected >= 1)"},
      {{"model.ff_width=0"}, "model.ff_width: out of range"},
      {{"model.embedding_width=-1"}, "model.embedding_width: out of range (got -1; expected >= 0)"},
      {{"model.dropout=1"}, "model.dropout: out of range (got 1; expected a value in [0, 0.99])"},
      {{"model.attention_dropout=-0.1"}, "model.attention_dropout: out of range"},
      {{"model.segment_vocab=0"}, "model.segment_vocab: out of range"},
      {{"model.init_std=-1"}, "model.init_std: out of range"},
      {{"model.width=30"},
       "model.width: width must be divisible by heads (got width 30 with 4 heads, model.heads "
       "from "},
      // The --set is the likely cause: the error is reported at it, naming the other key's file.
      {{"model.heads=3"},
       "command line (--set model.heads=3): model.heads: width must be "
       "divisible by heads (got width 128 with 3 heads, model.width from "},
      {{"model.heads=3"}, "expected a divisor of the width 128)"},
      {{"model.embedding_width=256"},
       "model.embedding_width: embedding width above model width (got 256; expected 0 or <= "
       "width 128)"},
      {{"task.seq_len=1"}, "task.seq_len: out of range (got 1; expected >= 2)"},
      {{"task.mask_prob=0"}, "task.mask_prob: out of range"},
      {{"task.num_classes=1"}, "task.num_classes: out of range"},
      {{"task.min_len=0"}, "task.min_len: out of range"},
      {{"task.max_len=3"}, "task.max_len: out of range (got 3; expected >= 4)"},
      {{"task.test_max_len=10"}, "task.test_max_len: out of range (got 10; expected >= 16)"},
      {{"task.synthetic_vocab=1"}, "task.synthetic_vocab: out of range"},
      {{"task.shift=-1"}, "task.shift: out of range"},
      {{"task.recall_queries=-1"}, "task.recall_queries: out of range (got -1; expected >= 0)"},
      {{"task.max_answer_len=0"}, "task.max_answer_len: out of range (got 0; expected >= 1)"},
      {{"task.type=recall", "task.synthetic_vocab=128", "task.seq_len=129"},
       "task.seq_len: the recall probe (one example of this many key-value pairs) needs a "
       "distinct key per pair (got 129 pairs with task.synthetic_vocab 128; expected <= 128 "
       "(task.synthetic_vocab))"},
      {{"task.type=recall", "task.synthetic_vocab=128", "snapshots.probe_len=200"},
       "snapshots.probe_len: the recall probe"},
      {{"task.type=clm"},
       "task.type: the clm task needs a causal model (got 'clm' with model.mode encoder; "
       "expected model.mode: decoder)"},
      {{"model.mode=decoder"},
       "task.type: this task needs a bidirectional model (got 'mlm' with model.mode decoder"},
      {{"model.mode=decoder", "task.type=span_qa"}, "got 'span_qa' with model.mode decoder"},
      {{"data.vocab_size=8"}, "data.vocab_size: out of range"},
      {{"data.valid_fraction=0.6"}, "data.valid_fraction: out of range"},
      {{"data.test_fraction=-0.1"}, "data.test_fraction: out of range"},
      {{"data.max_documents=-1"}, "data.max_documents: out of range"},
      {{"data.max_chars=-1"}, "data.max_chars: out of range"},
      {{"task.type=classify"},
       "data.corpus: corpus does not fit the task (got 'sotu' for task 'classify', set at "
       "command line (--set task.type=classify); expected a labelled corpus"},
      {{"task.type=classify", "data.corpus=sentiment", "data.label_names=[neg, neg]"},
       "data.label_names: a name is given to two classes (got 'neg' for classes 0 and 1; "
       "expected one distinct name per class)"},
      {{"data.tokenizer=byte_bpe", "data.merges_file=merges.txt"},
       "data.vocab_file: the byte_bpe tokenizer needs a GPT-2/RoBERTa vocab.json"},
      {{"data.tokenizer=byte_bpe", "data.vocab_file=vocab.json"},
       "data.merges_file: the byte_bpe tokenizer needs a GPT-2/RoBERTa merges.txt"},
      {{"train.steps=0"}, "train.steps: out of range"},
      {{"train.batch_size=0"}, "train.batch_size: out of range"},
      {{"train.lr=-1"}, "train.lr: out of range"},
      {{"train.weight_decay=-1"}, "train.weight_decay: out of range"},
      {{"train.warmup=1.5"}, "train.warmup: out of range"},
      {{"train.grad_clip=-1"}, "train.grad_clip: out of range"},
      {{"train.adam_beta1=1"}, "train.adam_beta1: out of range"},
      {{"train.adam_beta2=1"}, "train.adam_beta2: out of range"},
      {{"train.adam_eps=-1"}, "train.adam_eps: out of range"},
      {{"train.adam_eps=0"}, "train.adam_eps: out of range (got 0; expected > 0)"},
      {{"train.log_every=0"}, "train.log_every: out of range"},
      {{"train.eval_every=0"}, "train.eval_every: out of range"},
      {{"train.eval_batches=-1"}, "train.eval_batches: out of range (got -1; expected >= 0)"},
      {{"train.checkpoint_every=0"}, "train.checkpoint_every: out of range"},
      {{"train.early_stop=-1"}, "train.early_stop: out of range"},
      {{"snapshots.every_percent=101"}, "snapshots.every_percent: out of range"},
      {{"snapshots.probe_size=0"}, "snapshots.probe_size: out of range"},
      {{"snapshots.probe_len=-1"}, "snapshots.probe_len: out of range"},
      {{"snapshots.profile_radius=0"}, "snapshots.profile_radius: out of range"},
      {{"snapshots.steps=5,2000"},
       "snapshots.steps: snapshot step outside the run (got 2000; expected steps in [0, 1000])"},
      {{"threads=-1"}, "threads: out of range"},
      {{"device=tpu"},
       "device: unknown device (got 'tpu'; expected cpu, cuda or cuda:N with N a GPU index >= 0)"},
      // These used to pass: anything after "cuda:" did.
      {{"device=cuda:abc"}, "device: unknown device (got 'cuda:abc'; expected cpu, cuda or cuda:N"},
      {{"device=cuda:-1"}, "device: unknown device (got 'cuda:-1'; expected cpu, cuda or cuda:N"},
      {{"device=cuda:1.5"}, "device: unknown device (got 'cuda:1.5'; expected cpu, cuda or cuda:N"},
      {{"device=cuda:1x"}, "device: unknown device (got 'cuda:1x'; expected cpu, cuda or cuda:N"},
      {{"device=cuda:+1"}, "device: unknown device (got 'cuda:+1'; expected cpu, cuda or cuda:N"},
      {{"device=CPU"}, "device: unknown device (got 'CPU'; expected cpu, cuda or cuda:N"},
      {{"cpu_allocator=jemalloc"},
       "cpu_allocator: unknown CPU allocator (got 'jemalloc'; expected cache, cache_small_pages or "
       "system)"},
      {{"precision=fp16"}, "precision: unknown value (got 'fp16'; expected one of fp32 | bf16)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    const std::string origin = "command line (--set " + c.sets.back() + ")";
    CHECK_CONFIG_ERROR(load(c.sets), c.message);
    // The error points at the --set that produced the bad value... unless the rule reports a
    // key that was not set (task.type above), which comes from base.yaml.
    const std::string path = c.message.substr(0, c.message.find(':'));
    const std::string set_key = c.sets.back().substr(0, c.sets.back().find('='));
    if (path == set_key) CHECK_CONFIG_ERROR(load(c.sets), origin + ": " + path);
  }
  // The rules accept what they should.
  CHECK_NOTHROW(load({"model.mode=decoder", "task.type=clm"}));
  CHECK_NOTHROW(load({"model.mode=decoder", "task.type=classify", "data.corpus=sentiment"}));
  CHECK_NOTHROW(load({"model.embedding_width=128"}));
  CHECK_NOTHROW(load({"task.type=recall", "task.synthetic_vocab=128", "task.recall_queries=0"}));
  CHECK_NOTHROW(load({"snapshots.steps=0,1000", "device=cuda:1"}));
  CHECK_NOTHROW(load({"device=cuda:0"}));
  CHECK_NOTHROW(load({"device=cuda:12"}));
  CHECK_NOTHROW(load({"device=cuda"}));
  CHECK_NOTHROW(load({"data.tokenizer=wordpiece", "data.vocab_file=vocab.txt"}));
  CHECK_NOTHROW(
      load({"data.tokenizer=byte_bpe", "data.vocab_file=vocab.json", "data.merges_file=m.txt"}));
}

TEST_CASE("config: the rules of each variant") {
  struct Case {
    std::vector<std::string> sets;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"position.type=shaw", "position.shaw.clip=0"},
       "position.shaw.clip: out of range (got 0; expected >= 1)"},
      {{"position.type=huang", "position.huang.terms=qk,qb"},
       "position.huang.terms: unknown term (got 'qb'; expected qk, qa, ka or qka)"},
      {{"position.type=huang", "position.huang.terms=qk,qa,qk"},
       "position.huang.terms: term listed twice (got 'qk'"},
      {{"position.type=huang", "position.huang.terms=[]"},
       "position.huang.terms: no score terms (got an empty list"},
      {{"position.type=huang", "position.huang.terms=qa,ka", "position.huang.scale_qk=abs"},
       "position.huang.scale_qk: scales the qk term, which is not among the terms (got 'abs'"},
      {{"position.type=huang", "position.huang.scale_qk=both"},
       "position.huang.scale_qk: unknown value (got 'both'; expected one of none | abs | signed)"},
      {{"position.type=huang", "position.huang.clip=0"}, "position.huang.clip: out of range"},
      {{"position.type=huang_m1", "position.huang_m1.clip=0"}, "position.huang_m1.clip: out of range"},
      {{"position.type=huang_m2", "position.huang_m2.clip=-3"}, "position.huang_m2.clip: out of range"},
      {{"position.type=huang_m3", "position.huang_m3.clip=0"}, "position.huang_m3.clip: out of range"},
      {{"position.type=huang_m4", "position.huang_m4.clip=0"}, "position.huang_m4.clip: out of range"},
      {{"position.type=huang_m4", "position.huang_m4.terms=qk"}, "position.huang_m4.terms: unknown key"},
      {{"position.type=learned", "position.learned.max_len=0"},
       "position.learned.max_len: out of range (got 0; expected >= 1)"},
      {{"position.type=learned", "position.learned.max_len=64"},
       "position.learned.max_len: the learned table is shorter than the training sequences (got "
       "64; expected >= task.seq_len (128))"},
      {{"position.type=learned", "position.learned.beyond=wrap"},
       "position.learned.beyond: unknown value (got 'wrap'; expected one of error | clamp)"},
      {{"position.type=rope", "position.rope.rotary_dim=3"},
       "position.rope.rotary_dim: rotary width must be even and at most the head width (got 3; "
       "expected 0 (= d) or an even number <= 32)"},
      {{"position.type=rope", "position.rope.rotary_dim=34"}, "rotary width must be even and at most"},
      {{"position.type=rope", "position.rope.rotary_dim=-2"}, "rotary width must be even and at most"},
      {{"position.type=rope", "model.width=36"},
       "position.rope.rotary_dim: the head width is odd, so not every channel can be paired (got "
       "head width 9"},
      {{"position.type=rope", "position.rope.base=1"}, "position.rope.base: out of range"},
      {{"position.type=sinusoidal", "position.sinusoidal.base=0.5"},
       "position.sinusoidal.base: out of range"},
      {{"position.type=sinusoidal", "position.sinusoidal.scale=0"},
       "position.sinusoidal.scale: out of range"},
      {{"position.type=transformer_xl", "position.transformer_xl.base=1"},
       "position.transformer_xl.base: out of range"},
      {{"position.type=tisa", "position.tisa.kernels=0"}, "position.tisa.kernels: out of range"},
      {{"position.type=t5_bias", "position.t5_bias.buckets=31"},
       "position.t5_bias.buckets: out of range (got 31; expected an even number >= 4)"},
      {{"position.type=t5_bias", "position.t5_bias.buckets=2"}, "position.t5_bias.buckets: out of range"},
      {{"position.type=t5_bias", "position.t5_bias.max_distance=16"},
       "position.t5_bias.max_distance: out of range (got 16; expected > buckets/2 (16))"},
      {{"eval.lengths=64,128,64"},
       "eval.lengths: length listed twice (got 64; expected each length once)"},
      {{"position.type=none+tisa"},
       "position.type: 'none' cannot be stacked with other variants (got none+tisa; expected "
       "'none' alone)"},
      {{"position.type=tisa+learned+tisa"},
       "position.type: variant listed twice (got 'tisa'; expected each variant at most once)"},
      {{"position.type=[]"}, "position.type: no position variant given"},
      {{"position.bogus.clip=3"}, "position.bogus: unknown key (not a position variant or setting)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_CONFIG_ERROR(load(c.sets), c.message);
  }
  // Accepted neighbours of the failing cases.
  CHECK_NOTHROW(load({"position.type=learned", "position.learned.max_len=64",
                      "position.learned.beyond=clamp"}));
  CHECK_NOTHROW(load({"position.type=learned", "position.learned.max_len=128"}));
  CHECK_NOTHROW(load({"position.type=rope", "model.width=36", "position.rope.rotary_dim=8"}));
  CHECK_NOTHROW(load({"position.type=rope", "position.rope.rotary_dim=32"}));
  CHECK_NOTHROW(load({"position.type=huang", "position.huang.terms=qka,qk",
                      "position.huang.scale_qk=signed"}));
  CHECK_NOTHROW(load({"position.type=t5_bias", "position.t5_bias.max_distance=17"}));
  // A section for a variant that is not stacked is still checked (it is part of the config).
  CHECK_CONFIG_ERROR(load({"position.shaw.clip=0"}), "position.shaw.clip: out of range");
  // ...but the learned length rule only matters when learned is used.
  CHECK_NOTHROW(load({"position.learned.max_len=64"}));
}

TEST_CASE("config: merge order, later files win, --set wins over files") {
  ConfigTempDir dir;
  const std::string one = dir.write("one.yaml", "model:\n  layers: 3\n  width: 64\n");
  const std::string two = dir.write("two.yaml", "# comment\nmodel:\n  layers: 5\n");
  auto loaded = load_config({base(), one, two});
  CHECK(loaded.config.model.layers == 5);
  CHECK(loaded.config.model.width == 64);   // maps merge key by key
  CHECK(loaded.config.model.ff_width == 512);
  CHECK(loaded.sources.describe("model.layers") == two + ":3:3");
  CHECK(loaded.sources.describe("model.width") == one + ":3:3");
  CHECK(load_config({base(), two, one}).config.model.layers == 3);

  auto set = load_config({base(), one, two}, {"model.layers=7"});
  CHECK(set.config.model.layers == 7);
  CHECK(set.sources.describe("model.layers") == "command line (--set model.layers=7)");
  // A later --set wins over an earlier one.
  CHECK(load({"seed=3", "seed=4"}).seed == 4);
  // A non-map value replaces a map entirely, so a list replaces a list.
  const std::string steps = dir.write("steps.yaml", "snapshots:\n  steps: [1, 2, 3]\n");
  const std::string steps2 = dir.write("steps2.yaml", "snapshots:\n  steps: [9]\n");
  CHECK(load_config({base(), steps, steps2}).config.snapshots.steps == std::vector<int64_t>{9});
}

TEST_CASE("config: --set overrides") {
  CHECK(load({"model.layers=4"}).model.layers == 4);
  CHECK(load({"train.lr=3e-5"}).train.lr == 3e-5);
  CHECK(load({"model.share_layers=true"}).model.share_layers);
  CHECK(load({"name=my run"}).name == "my run");
  CHECK(load({"snapshots.steps=10,20"}).snapshots.steps == std::vector<int64_t>{10, 20});
  CHECK(load({"snapshots.steps=[10, 30]"}).snapshots.steps == std::vector<int64_t>{10, 30});
  CHECK(load({"snapshots.steps="}).snapshots.steps.empty());
  CHECK(test::contains(to_yaml(load({"position.huang.terms=qk, qka"})), "terms: [qk, qka]"));

  auto stacked = load({"position.type=learned+tisa"}).position;
  CHECK(stacked.types == std::vector<std::string>{"learned", "tisa"});
  CHECK(stacked.params.count("learned") == 1);
  CHECK(stacked.params.count("tisa") == 1);
  CHECK(load({"position.type=[learned, tisa]"}).position.types ==
        std::vector<std::string>{"learned", "tisa"});
  CHECK(load({"position.type= rope + alibi "}).position.types ==
        std::vector<std::string>{"rope", "alibi"});
  auto with_params = load({"position.type=shaw", "position.shaw.clip=5"});
  CHECK(with_params.position.types == std::vector<std::string>{"shaw"});
  CHECK(load({"position.type=shaw", "position.shaw={clip: 5, values: false}"}).position.has("shaw"));

  CHECK_CONFIG_ERROR(load({"model.layers"}), "command line (--set model.layers): expected dotted.key=value");
  CHECK_CONFIG_ERROR(load({"=4"}), "expected dotted.key=value");
  CHECK_CONFIG_ERROR(load({"model..layers=4"}), "empty key segment in 'model..layers'");
  CHECK_CONFIG_ERROR(load({"model.layers.deep=4"}),
                     "model.layers is '2', not a map, so it has no key 'deep'");
  // A map given whole from the command line is checked key by key.
  CHECK_CONFIG_ERROR(load({"model={layers: 3, depth: 2}"}),
                     "command line (--set model={layers: 3, depth: 2}): model.depth: unknown key");
}

TEST_CASE("config: an error names the line and column of the offending key in its file") {
  ConfigTempDir dir;
  const std::string f = dir.write("run.yaml",
                                  "name: lines\n"
                                  "model:\n"
                                  "  layers: 2\n"
                                  "  width: 30\n"
                                  "  heads: 4\n"
                                  "train:\n"
                                  "  steps: 100\n"
                                  "  lr: fast\n");
  CHECK_CONFIG_ERROR(load_config({base(), f}), f + ":8:3: train.lr: wrong type (got 'fast'");
  const std::string g = dir.write("run2.yaml",
                                  "model:\n"
                                  "  layers: 2\n"
                                  "  width: 30\n");
  // A validate() rule reports the key it is about, at the line that set it.
  CHECK_CONFIG_ERROR(load_config({base(), g}), g + ":3:3: model.width: width must be divisible");
  const std::string h = dir.write("run3.yaml",
                                  "position:\n"
                                  "  type: learned\n"
                                  "  learned:\n"
                                  "    beyond: error\n"
                                  "    max_len: 16\n");
  CHECK_CONFIG_ERROR(load_config({base(), h}), h + ":5:5: position.learned.max_len: the learned");
}

TEST_CASE("config: the resolved config re-parses to an equal config") {
  std::vector<std::vector<std::string>> variants;
  for (const auto& name : Registry::get().names()) variants.push_back({"position.type=" + name});
  variants.push_back({"position.type=learned+tisa+rope", "position.tisa.kernels=3",
                      "position.learned.beyond=clamp", "position.rope.rotary_dim=8",
                      "position.shaw.values=false", "position.relative_impl=direct",
                      "position.huang.terms=qka,qk", "position.huang.scale_qk=signed",
                      "train.lr=3e-5", "train.adam_eps=1e-9", "model.dropout=0.1",
                      "model.init_std=0.0123456789", "snapshots.steps=0,7,1000",
                      "name=\"odd: name #1\"", "data.vocab_file=", "data.corpus=~/x y.txt",
                      "model.mode=decoder", "task.type=clm", "model.share_layers=yes"});
  for (const auto& sets : variants) {
    CAPTURE(sets.front());
    const Config a = load(sets);
    const std::string text = to_yaml(a);
    const Config b = parse_config(YAML::Load(text), nullptr);
    CHECK(to_yaml(b) == text);
    CHECK(b.position.types == a.position.types);
    CHECK(b.position.relative_impl == a.position.relative_impl);
    CHECK(b.train.lr == a.train.lr);
    CHECK(b.train.adam_eps == a.train.adam_eps);
    CHECK(b.model.init_std == a.model.init_std);
    CHECK(b.model.share_layers == a.model.share_layers);
    CHECK(b.snapshots.steps == a.snapshots.steps);
    CHECK(b.name == a.name);
    CHECK(b.data.corpus == a.data.corpus);
  }
  // Values that must survive exactly (not just re-serialize the same way).
  const Config c = parse_config(YAML::Load(to_yaml(load(variants.back()))), nullptr);
  CHECK(c.train.lr == 3e-5);
  CHECK(c.model.init_std == 0.0123456789);
  CHECK(c.name == "odd: name #1");
  CHECK(c.data.vocab_file.empty());
  CHECK(c.data.corpus == "~/x y.txt");
  CHECK(c.position.types == std::vector<std::string>{"learned", "tisa", "rope"});
  CHECK(c.snapshots.steps == std::vector<int64_t>{0, 7, 1000});
  CHECK(to_yaml(c).find("kernels: 3") != std::string::npos);
  CHECK(to_yaml(c).find("values: false") != std::string::npos);
  CHECK(to_yaml(c).find("terms: [qka, qk]") != std::string::npos);
}

TEST_CASE("relpos binary: a bad config exits non-zero with error: and hint:") {
  const std::string bin = RELPOS_BINARY;
  {
    auto [status, out] = run_shell(bin + " config --set model.width=30");
    CHECK(status == 2);
    CHECK_MESSAGE(test::contains(out,
                                 "error: command line (--set model.width=30): model.width: width "
                                 "must be divisible by heads"),
                  out);
    CHECK(test::contains(out, "hint: "));
  }
  {
    auto [status, out] = run_shell(bin + " list --set position.type=nope");
    CHECK(status != 0);
    CHECK_MESSAGE(test::contains(out, "error: "), out);
    CHECK_MESSAGE(test::contains(out, "unknown position variant (got 'nope'"), out);
  }
  {
    auto [status, out] = run_shell(bin + " config --set seed=5 --set position.type=learned+tisa");
    CHECK(status == 0);
    CHECK(out == to_yaml(load({"seed=5", "position.type=learned+tisa"})));
  }
}

TEST_CASE("config: config_differences lists changed, added and removed keys, ignoring the named ones") {
  const std::string a = "seed: 1\nthreads: 1\ntrain:\n  steps: 300\n  lr: 0.001\n"
                        "sweep:\n  grid: [\"seed=1,2\"]\nposition:\n  types: [learned, tisa]\n";
  const std::string b = "seed: 1\nthreads: 4\ntrain:\n  steps: 600\n  lr: 0.001\n  warmup: 0.1\n"
                        "sweep:\n  grid: [\"seed=1,2,3\"]\nposition:\n  types: [learned]\n";
  CHECK(config_differences(a, a).empty());
  const auto d = config_differences(a, b, {"threads", "sweep"});
  CHECK(d == std::vector<std::string>{"position.types[1]: tisa -> (absent)",
                                      "train.steps: 300 -> 600", "train.warmup: (absent) -> 0.1"});
  // Without ignores, threads and the grid count too.
  CHECK(config_differences(a, b).size() == 5);
  // "sweep" ignores sweep.* but not a key that merely starts with the same letters.
  CHECK(config_differences("sweeps: 1\n", "sweeps: 2\n", {"sweep"}).size() == 1);
  CHECK_THROWS_AS(config_differences("a: [1, 2\n", "a: 1\n"), ConfigError);
}

TEST_CASE("config: every shipped experiment config loads and validates") {
  // The stages of `relpos reproduce` load these files (plus --set overrides); a rule added to
  // validate() must not reject one of them. Synthetic configs are checked with each task, as
  // reproduce synthetic runs them (recall has its own rules).
  namespace fs = std::filesystem;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(relpos::test::config_path("experiments"))) {
    if (e.path().extension() != ".yaml") continue;
    const std::string file = e.path().string();
    CAPTURE(file);
    ++files;
    Config c;
    REQUIRE_NOTHROW(c = load_config({file}).config);
    // An experiment's main config (mini.yaml, paper.yaml) evaluates lengths from its training
    // length up: a paper config that inherits the mini lengths would evaluate below it.
    if (!c.eval.lengths.empty() && e.path().stem().string().find('-') == std::string::npos)
      CHECK(c.eval.lengths.front() == c.task.seq_len);
    // Each position variant of the file's own grid (the sweep's points).
    std::vector<std::string> variants = {""};
    for (const auto& g : c.sweep.grid)
      if (g.rfind("position.type=", 0) == 0) {
        variants.clear();
        std::stringstream list(g.substr(g.find('=') + 1));
        for (std::string v; std::getline(list, v, ',');) variants.push_back(v);
      }
    std::vector<std::string> tasks = {""};
    if (e.path().parent_path().filename() == "synthetic")
      tasks = {"copy", "reverse", "sort", "shift", "recall", "marker_distance"};
    for (const auto& v : variants)
      for (const auto& task : tasks) {
        std::vector<std::string> sets;
        if (!v.empty()) sets.push_back("position.type=" + v);
        if (!task.empty()) sets.push_back("task.type=" + task);
        CAPTURE(v);
        CAPTURE(task);
        CHECK_NOTHROW(load_config({file}, sets));
      }
  }
  CHECK(files >= 20);
}

TEST_CASE("config: every bad value of a file is reported at once, each with its line") {
  test::TempFolder tmp("config_many_errors");
  const std::string path = tmp.str("bad.yaml");
  {
    std::ofstream f(path);
    f << "model:\n  layers: 0\n  heads: many\ntrain:\n  lr: -1\n  steps: 10\n";
  }
  try {
    load_config({path});
    FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    CHECK_MESSAGE(m.find("3 problems in the config:") == 0, m);
    // The unreadable value while reading, then the values out of range.
    CHECK(m.find("\n  1. " + path + ":3:3: model.heads: ") != std::string::npos);
    CHECK(m.find("\n  2. " + path + ":2:3: model.layers: out of range (got 0; expected >= 1)") !=
          std::string::npos);
    CHECK(m.find("\n  3. " + path + ":5:3: train.lr: out of range (got -1; expected >= 0)") !=
          std::string::npos);
  }
  // Fixed on the command line: no error left.
  CHECK_NOTHROW(load_config({path}, {"model.layers=2", "model.heads=2", "train.lr=0.1"}));
}

TEST_CASE("config: an unknown key of a position variant points to docs/variants.md, not base.yaml") {
  try {
    load_config({test::config_path("base.yaml")}, {"position.tisa.kernel=3"});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("position.tisa.kernel: unknown key") != std::string::npos);
    CHECK(std::string(e.what()).find("known: ") != std::string::npos);
    CHECK(e.hint().find("docs/variants.md") != std::string::npos);
  }
  try {
    load_config({test::config_path("base.yaml")}, {"model.widht=3"});
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.hint().find("configs/base.yaml") != std::string::npos);
  }
}

TEST_CASE("relpos config: a --set of a variant that position.type does not use gets a note") {
  const std::string bin = RELPOS_BINARY;
  auto [status, out] =
      run_shell(bin + " config --set position.type=rope --set position.tisa.kernels=3");
  CHECK(status == 0);
  CHECK_MESSAGE(test::contains(out,
                               "note: --set position.tisa.kernels=3: position.type is rope, which "
                               "does not use tisa; the setting has no effect"),
                out);
  // A used variant's key: no note.
  auto [status2, out2] =
      run_shell(bin + " config --set position.type=tisa --set position.tisa.kernels=3");
  CHECK(status2 == 0);
  CHECK_FALSE(test::contains(out2, "note:"));
}
