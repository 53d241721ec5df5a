// Command-line options checked before any work starts, through the relpos executable: a value
// out of range, an option that would be ignored, or an override `eval` must not apply is an
// `error:` line naming the option, exit status 2, and nothing run or written.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "core/util/process.h"
#include "core/config/config.h"
#include "core/io/run_file.h"
#include "core/train/past_bound.h"
#include "core/train/run_model.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

namespace {

struct CliCase {
  std::vector<std::string> args;
  std::string error;  // on the error: line
};

// Each case exits 2 with `error: <error>`; `forbidden` must not appear in its output.
void check_refused(const std::vector<CliCase>& cases, const std::string& log,
                   const std::string& forbidden = "") {
  for (const auto& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    CAPTURE(line);
    auto [code, out] = run_relpos(c.args, log);
    CHECK_MESSAGE(code == 2, out);
    CHECK_MESSAGE(contains(out, "error: " + c.error), out);
    if (!forbidden.empty()) CHECK_MESSAGE(!contains(out, forbidden), out);
  }
}

// The tiny run of tests/tiny_run.h (learned+tisa, learned max_len 32, T = 32), 4 steps.
std::string tiny_trained_run(const TempFolder& tmp) {
  const std::string dir = tmp.str("run");
  train_here(tiny_run(tmp.str("cache"), 4), dir);
  return dir;
}

}  // namespace

TEST_CASE("relpos eval: --set may change evaluation settings only, never the model or the data split") {
  TempFolder tmp("cli_eval_sets");
  const std::string run = tiny_trained_run(tmp);
  std::vector<CliCase> cases;
  for (const std::string set : {"position.type=none", "position.type=alibi",
                                "data.split_seed=7", "data.test_fraction=0.5", "task.seq_len=16",
                                "model.layers=3", "position.learned.max_len=64", "seed=3"}) {
    const std::string key = set.substr(0, set.find('='));
    cases.push_back({{"eval", "--run", run, "--lengths", "16", "--set", set},
                     "eval: --set " + set + ": '" + key + "' is not an evaluation setting"});
  }
  check_refused(cases, tmp.str("log"));
  // Nothing was evaluated, so nothing passes for the run's own numbers.
  CHECK_FALSE(fs::exists(fs::path(run) / "eval_extrapolation.csv"));
  CHECK_FALSE(RunFileReader::open(run_h5_path(run))->exists("/eval/extrapolation"));

  // The evaluation settings are accepted (the attention path too); clamping lets the learned
  // table reach T = 64.
  auto [code, out] = run_relpos({"eval", "--run", run, "--lengths", "16,64", "--set",
                                 "eval.max_tokens=128", "--set", "threads=1", "--set",
                                 "cpu_allocator=system", "--set", "position.learned.beyond=clamp",
                                 "--set", "model.attention_impl=eager"},
                                tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(contains(out, "(trained at T=32)"), out);
  CHECK_MESSAGE(contains(out, "T=64       accuracy"), out);  // not n/a: clamped
  CHECK(fs::exists(fs::path(run) / "eval_extrapolation.csv"));
}

TEST_CASE("relpos eval --suffix: a further table beside the run's own; a bad suffix is an error") {
  TempFolder tmp("cli_eval_suffix");
  const std::string run = tiny_trained_run(tmp);  // learned max_len 32, trained at T = 32
  check_refused({{{"eval", "--run", run, "--suffix", "a-b"},
                  "--suffix: 'a-b' (expected letters, digits and _ only)"},
                 {{"eval", "--run", run, "--suffix", ""},
                  "--suffix: an empty suffix (expected letters, digits and _)"}},
                tmp.str("log"));
  const fs::path own = fs::path(run) / "eval_extrapolation.csv";
  const fs::path clamped = fs::path(run) / "eval_extrapolation_clamped.csv";
  CHECK_FALSE(fs::exists(clamped));
  // Clamped, T = 64 is past the table and still evaluated; the run's own table is not written.
  auto [code, out] = run_relpos({"eval", "--run", run, "--lengths", "16,64", "--suffix", "clamped",
                                 "--set", "position.learned.beyond=clamp", "--set",
                                 "eval.max_tokens=128"},
                                tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(contains(out, "/eval/extrapolation_clamped"), out);
  CHECK(fs::exists(clamped));
  CHECK_FALSE(fs::exists(own));
  {
    auto h5 = RunFileReader::open(run_h5_path(run));
    CHECK(h5->exists("/eval/extrapolation_clamped"));
    CHECK_FALSE(h5->exists("/eval/extrapolation"));
  }
  // Then the run's own table: T = 64 is not applicable there, and the clamped table is kept.
  std::tie(code, out) = run_relpos(
      {"eval", "--run", run, "--lengths", "16,64", "--set", "eval.max_tokens=128"}, tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(contains(out, "T=64     n/a"), out);
  auto row64 = [](const fs::path& csv) {
    std::ifstream in(csv);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("64,", 0) == 0) return line;
    return std::string();
  };
  CHECK_MESSAGE(row64(clamped).rfind("64,1,", 0) == 0, row64(clamped));
  CHECK_MESSAGE(row64(own).rfind("64,0,", 0) == 0, row64(own));
}

TEST_CASE("relpos eval: a learned table is evaluated clamped too, as its own table, without a "
          "rerun") {
  TempFolder tmp("cli_eval_past_bound");
  const std::string run = tiny_trained_run(tmp);  // learned+tisa, max_len 32, trained at T = 32
  const fs::path own = fs::path(run) / "eval_extrapolation.csv";
  const fs::path clamped = fs::path(run) / "eval_extrapolation_clamped.csv";
  auto row64 = [](const fs::path& csv) {
    std::ifstream in(csv);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("64,", 0) == 0) return line;
    return std::string();
  };
  // --no-past-bound: the table as trained only.
  auto [code, out] = run_relpos({"eval", "--run", run, "--lengths", "16,64", "--set",
                                 "eval.max_tokens=128", "--no-past-bound"},
                                tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK(fs::exists(own));
  CHECK_FALSE(fs::exists(clamped));
  // By default: T = 64 is n/a in the run's own table, and evaluated in the clamped one, which
  // the registry names (position.learned.beyond=clamp, past_label "clamped").
  std::tie(code, out) = run_relpos(
      {"eval", "--run", run, "--lengths", "16,64", "--set", "eval.max_tokens=128"}, tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(contains(out, "T=64     n/a"), out);
  CHECK_MESSAGE(contains(out, "also evaluated with position.learned.beyond=clamp"), out);
  CHECK_MESSAGE(contains(out, "/eval/extrapolation_clamped"), out);
  CHECK_MESSAGE(row64(own).rfind("64,0,", 0) == 0, row64(own));
  CHECK_MESSAGE(row64(clamped).rfind("64,1,", 0) == 0, row64(clamped));
  {
    auto h5 = RunFileReader::open(run_h5_path(run));
    CHECK(h5->exists("/eval/extrapolation"));
    CHECK(h5->exists("/eval/extrapolation_clamped"));
  }
  // Asking for the clamped table by hand (the old way) makes no second one.
  std::tie(code, out) = run_relpos({"eval", "--run", run, "--lengths", "16", "--set",
                                    "position.learned.beyond=clamp", "--set", "eval.max_tokens=128"},
                                   tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(!contains(out, "also evaluated"), out);
  // A run without a bounded table has no such evaluation.
  const std::string rope = tmp.str("rope");
  auto sets = tiny_run(tmp.str("cache"), 2);
  sets.push_back("position.type=rope");
  train_here(sets, rope);
  CHECK(past_bound_settings(rope).empty());
  CHECK(past_bound_settings(run).size() == 1);
}

TEST_CASE("relpos eval: numeric options below their minimum or beyond int64 are errors") {
  TempFolder tmp("cli_eval_numbers");
  const std::string run = tiny_trained_run(tmp);
  check_refused(
      {
          {{"eval", "--run", run, "--max-tokens", "0"}, "--max-tokens: got 0; expected an integer >= 1"},
          {{"eval", "--run", run, "--max-tokens", "-5"}, "--max-tokens: got -5; expected an integer >= 1"},
          {{"eval", "--run", run, "--batch", "0"}, "--batch: got 0; expected an integer >= 1"},
          {{"eval", "--run", run, "--batch", "-1"}, "--batch: got -1; expected an integer >= 1"},
          {{"eval", "--run", run, "--stride", "-1"}, "--stride: got -1; expected an integer >= 0"},
          {{"eval", "--run", run, "--lengths", "16,99999999999999999999"},
           "--lengths: got 99999999999999999999; expected an integer >= 2"},
          {{"eval", "--run", run, "--lengths", "1"}, "--lengths: got 1; expected an integer >= 2"},
      },
      tmp.str("log"));
  CHECK_FALSE(fs::exists(fs::path(run) / "eval_extrapolation.csv"));
}

TEST_CASE("relpos eval: an empty --lengths, or an empty item in it, is an error naming --lengths") {
  TempFolder tmp("cli_eval_lists");
  const std::string run = tiny_trained_run(tmp);
  check_refused(
      {
          // Was: "eval: length 0 is too short" (no 0 was given).
          {{"eval", "--run", run, "--lengths", ""},
           "--lengths: got an empty value; expected a comma-separated list"},
          // Was: accepted as 32,64.
          {{"eval", "--run", run, "--lengths", "16,,32"},
           "--lengths: got '16,,32', which has an empty item; expected a comma-separated list"},
          {{"eval", "--run", run, "--lengths", "16,"},
           "--lengths: got '16,', which has an empty item; expected a comma-separated list"},
          {{"eval", "--run", run, "--lengths", ",16"},
           "--lengths: got ',16', which has an empty item; expected a comma-separated list"},
          {{"eval", "--run", run, "--lengths", "16", "--lengths", "8,16"},
           "eval: length 16 is listed twice"},
          // An empty number used to become 0 without a word.
          {{"eval", "--run", run, "--lengths", "16", "--batch", ""},
           "--batch: got an empty value; expected an integer >= 1"},
      },
      tmp.str("log"));
  CHECK_FALSE(fs::exists(fs::path(run) / "eval_extrapolation.csv"));
  // Several --lengths add up; a length of two digits or more is one item.
  auto [code, out] = run_relpos({"eval", "--run", run, "--lengths", "16", "--lengths", "8,32"},
                                tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  for (const std::string T : {"T=8 ", "T=16 ", "T=32 "}) CHECK_MESSAGE(contains(out, T), out);
}

TEST_CASE("relpos eval: --stride on a run whose task is not clm is an error naming the task") {
  TempFolder tmp("cli_eval_stride");
  const std::string run = tiny_trained_run(tmp);  // an mlm run
  // Was: ignored without a word, as only clm has a sliding window.
  check_refused({{{"eval", "--run", run, "--lengths", "16", "--stride", "8"},
                  "eval: --stride 8 applies to clm runs only (a sliding-window perplexity); this "
                  "run's task is mlm"}},
                tmp.str("log"));
  CHECK_FALSE(fs::exists(fs::path(run) / "eval_extrapolation.csv"));
  auto [code, out] = run_relpos({"eval", "--run", run, "--lengths", "16", "--stride", "0"},
                                tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);  // 0: no sliding window, which is what an mlm run has
}

TEST_CASE("load_run: a checkpoint with a parameter the model lacks is an error, not ignored") {
  TempFolder tmp("cli_strict_checkpoint");
  const std::string run = tiny_trained_run(tmp);
  CHECK_NOTHROW(load_run(run));
  // The stored config now builds a model without TISA: its parameters in the checkpoint would
  // have been dropped without a word.
  Config c = load_run_config(run).config;
  c.position.types = {"learned"};
  std::ofstream(run_config_path(run)) << to_yaml(c);
  try {
    load_run(run);
    FAIL("load_run accepted a checkpoint with parameters the model lacks");
  } catch (const SchemaError& e) {
    CHECK_MESSAGE(contains(e.what(), "does not match the model"), e.what());
    CHECK_MESSAGE(contains(e.what(), "of the checkpoint is not in the model"), e.what());
  }
}

TEST_CASE("relpos bench: every option is checked before any configuration runs") {
  TempFolder tmp("cli_bench");
  const std::vector<std::string> tiny = {"--lengths", "16", "--steps", "1", "--warmup", "0",
                                         "--set", "model.layers=1", "--set", "model.width=16",
                                         "--set", "model.heads=2", "--set", "model.ff_width=32"};
  auto bench = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"bench", "--variants", "none"};
    a.insert(a.end(), tiny.begin(), tiny.end());
    a.insert(a.end(), extra.begin(), extra.end());  // later values win
    return a;
  };
  fs::create_directories(tmp.str("folder"));
  // "[1/" is the first child's progress line: none may start.
  check_refused(
      {
          {bench({"--steps", "0"}), "--steps: got 0; expected an integer >= 1"},
          {bench({"--steps", "-1"}), "--steps: got -1; expected an integer >= 1"},
          {bench({"--warmup", "-1"}), "--warmup: got -1; expected an integer >= 0"},
          {bench({"--vocab", "1"}), "--vocab: got 1; expected an integer >= 2"},
          {bench({"--vocab", "-1"}), "--vocab: got -1; expected an integer >= 2"},
          {bench({"--repeat", "0"}), "--repeat: got 0; expected an integer from 1 to 1000"},
          {bench({"--repeat", "-2"}), "--repeat: got -2; expected an integer from 1 to 1000"},
          {bench({"--batch", "0"}), "--batch: got 0; expected an integer >= 1"},
          {bench({"--threads", "-1"}), "--threads: got -1; expected an integer >= 0"},
          {bench({"--timeout", "0"}), "--timeout: got 0; expected an integer >= 1"},
          {bench({"--timeout", "-1"}), "--timeout: got -1; expected an integer >= 1"},
          {bench({"--max-memory", "-1"}), "--max-memory: got '-1'; expected a number >= 0"},
          {bench({"--max-memory", "nan"}), "--max-memory: got 'nan'; expected a number >= 0"},
          {bench({"--max-memory", "1"}), "bench: --max-memory 1: too small (expected 0 = no "
                                         "limit, or at least 2048 MB"},
          {bench({"--direct", "bogus"}), "bench: --direct: 'bogus' is not a measured variant "
                                         "with a direct path"},
          {bench({"--json", tmp.str("folder")}), "bench: --json " + tmp.str("folder") + ": is a folder"},
          {bench({"--json", tmp.str("absent/x.json")}),
           "bench: --json " + tmp.str("absent/x.json") + ": cannot write: No such file or directory"},
          {{"bench", "--variants", "none,bogus", "--lengths", "16"},
           "command line (--variants bogus): position.type: unknown position variant"},
          // Empty items used to be dropped, and a repeated one measured twice.
          {{"bench", "--variants", "", "--lengths", "16"},
           "--variants: got an empty value; expected a comma-separated list"},
          {{"bench", "--variants", "none,", "--lengths", "16"},
           "--variants: got 'none,', which has an empty item; expected a comma-separated list"},
          {{"bench", "--variants", "none", "--lengths", "16,,32"},
           "--lengths: got '16,,32', which has an empty item; expected a comma-separated list"},
          {{"bench", "--variants", "none,none", "--lengths", "16"},
           "bench: --variants: 'none' is listed twice (expected each variant once)"},
          {{"bench", "--variants", "none", "--lengths", "16,32,16"},
           "bench: --lengths: 16 is listed twice (expected each length once)"},
          {{"bench", "--variants", "none", "--lengths", "16", "--lengths", "16"},
           "bench: --lengths: 16 is listed twice (expected each length once)"},
          {{"bench", "--variants", "none", "--lengths", "16,x"},
           "--lengths: got x; expected an integer (in '16,x')"},
      },
      tmp.str("log"), "[1/");
}

TEST_CASE("bench: a child ended by a signal under --max-memory is said to have hit the limit") {
  ChildResult r;
  r.signal = SIGSEGV;
  CHECK(r.describe(0, 2048).find("under the address-space limit of 2048 MB (--max-memory)") !=
        std::string::npos);
  CHECK(r.describe(0).find("--max-memory") == std::string::npos);
}

TEST_CASE("relpos reproduce: a file as --out, no experiment name, an empty stage name") {
  TempFolder tmp("cli_reproduce");
  const std::string file = tmp.str("a_file");
  std::ofstream(file) << "x";
  check_refused(
      {
          {{"reproduce", "quickstart", "--out", file}, file + ": exists and is not a folder"},
          {{"reproduce"}, "reproduce: no experiment named (expected one of: "},
          {{"reproduce", "quickstart", "--out", tmp.str("q"), "--set", ":seed=1"},
           "--set :seed=1: empty stage name before ':'"},
          {{"reproduce", "quickstart", "--out", tmp.str("q"), "--set", "nostage:seed=1"},
           "--set nostage:seed=1: reproduce quickstart has no stage 'nostage'"},
      },
      tmp.str("log"));
  CHECK_FALSE(fs::exists(tmp.str("q")));
}

TEST_CASE("relpos sweep and train: launch and grid options are checked and named") {
  TempFolder tmp("cli_sweep_train");
  const std::string out = tmp.str("out");
  check_refused(
      {
          {{"sweep", "--grid", "seed=1,2", "--threads", "-1", "--out", out},
           "--threads: got -1; expected an integer >= 0"},
          {{"sweep", "--grid", "seed=1,2", "--emit-slurm", "", "--out", out},
           "--emit-slurm: got an empty value; expected a file name"},
          {{"sweep", "--grid", "position.type=none,bogus", "--out", out},
           "command line (--grid position.type=none,bogus): position.type: unknown position "
           "variant (got 'bogus'"},
          // --emit-slurm checks every point's config too, before writing the script.
          {{"sweep", "--grid", "position.type=none,bogus", "--emit-slurm", tmp.str("job.sh"),
            "--out", out},
           "command line (--grid position.type=none,bogus): position.type: unknown position "
           "variant (got 'bogus'"},
          // Two points in one run folder: refused before the folder or the script is written.
          {{"sweep", "--grid", "data.corpus=a/b,a:b", "--out", out},
           "--grid: the points data.corpus=a/b and data.corpus=a:b map to the same run folder "
           "'corpusa_b'"},
          {{"sweep", "--grid", "data.corpus=a/b,a:b", "--emit-slurm", tmp.str("job.sh"), "--out",
            out},
           "--grid: the points data.corpus=a/b and data.corpus=a:b map to the same run folder "
           "'corpusa_b'"},
          {{"train", "--node-rank", "5", "--out", out}, "train: --node-rank 5: expected 0..0"},
          {{"train", "--nproc", "2", "--master-port", "-1", "--out", out},
           "--master-port: got -1; expected an integer from 1 to 65535"},
          {{"train", "--nproc", "2", "--master-port", "99999", "--out", out},
           "--master-port: got 99999; expected an integer from 1 to 65535"},
          {{"train", "--master-port", "29500", "--out", out},
           "train: --master-port applies to a data-parallel launch only"},
          {{"bogus"}, "unknown command 'bogus' (known: list, config, train, eval, sweep"},
      },
      tmp.str("log"), "error: error:");
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(tmp.str("job.sh")));
}

TEST_CASE(
    "relpos analyze and report: a missing folder, bad --group-by keys, a negative --step and bad "
    "colour-scale options are named") {
  TempFolder tmp("cli_analyze");
  const std::string run = tiny_trained_run(tmp);
  std::filesystem::create_directories(tmp.str("empty"));
  check_refused(
      {
          {{"analyze", tmp.str("absent"), "--no-figures"}, tmp.str("absent") + " does not exist"},
          // `report` checks its folder as `analyze` does (it said "holds no run.h5" here).
          {{"report", tmp.str("absent")}, tmp.str("absent") + " does not exist"},
          {{"report", run + "/run.h5"}, run + "/run.h5 is not a folder"},
          {{"report", tmp.str("empty")}, tmp.str("empty") + " holds no run.h5 and no run folders"},
          {{"analyze", run, "--no-figures", "--group-by", "bogus.key"},
           "--group-by: no run's config has the key 'bogus.key'"},
          {{"analyze", run, "--no-figures", "--group-by", "model.layers,model.layers"},
           "--group-by: the key 'model.layers' is listed twice"},
          // These used to mean the default grouping and the last snapshot, without a word.
          {{"analyze", run, "--no-figures", "--group-by", ""},
           "--group-by: got an empty value; expected a comma-separated list"},
          {{"analyze", run, "--no-figures", "--group-by", ","},
           "--group-by: got ',', which has an empty item; expected a comma-separated list"},
          {{"analyze", run, "--no-figures", "--group-by", "model.layers,"},
           "--group-by: got 'model.layers,', which has an empty item; expected a comma-separated "
           "list"},
          {{"analyze", run, "--no-figures", "--step", "-5"},
           "--step: got -5; expected an integer >= 0"},
          {{"analyze", run, "--no-figures", "--step", "-1"},
           "--step: got -1; expected an integer >= 0"},
          {{"analyze", run, "--no-figures", "--heads-scale", "all"},
           "--heads-scale: got 'all'; expected shared or per-head"},
          {{"analyze", run, "--no-figures", "--colour-cap", "0.3"},
           "--colour-cap: got '0.3'; expected a quantile from 0.5 to 1 (1: uncapped)"},
          {{"analyze", run, "--no-figures", "--colour-cap", "nan"},
           "--colour-cap: got 'nan'; expected a quantile from 0.5 to 1 (1: uncapped)"},
      },
      tmp.str("log"));
  auto [code, out] = run_relpos({"analyze", run, "--no-figures", "--group-by", "model.layers"},
                                tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
}

TEST_CASE("relpos inspect: a folder, and a damaged .pt reported as a checkpoint, not as HDF5") {
  TempFolder tmp("cli_inspect");
  const std::string empty_pt = tmp.str("checkpoint.pt");
  std::ofstream(empty_pt).close();
  const std::string zeros_pt = tmp.str("zeros.pt");
  std::ofstream(zeros_pt) << std::string(4096, '\0');
  check_refused(
      {
          {{"inspect", tmp.str("")}, "inspect: " + tmp.str("") + " is a folder"},
          {{"inspect", empty_pt}, "'" + empty_pt + "' is not a relpos checkpoint, or it is truncated"},
          {{"inspect", zeros_pt}, "'" + zeros_pt + "' is not a relpos checkpoint, or it is truncated"},
      },
      tmp.str("log"), "HDF5");
}

TEST_CASE("relpos inspect: a FIFO or a device is refused before it is opened") {
  // Was: inspect opened the FIFO to look for a checkpoint's magic bytes and waited for a writer.
  TempFolder tmp("cli_inspect_fifo");
  std::vector<CliCase> cases;
  for (const std::string name : {"f.h5", "f.pt"}) {
    const std::string fifo = tmp.str(name);
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    cases.push_back({{"inspect", fifo}, "inspect: " + fifo + ": not a regular file (a FIFO; "
                                        "expected a run.h5 or checkpoint.pt file)"});
  }
  if (fs::exists("/dev/zero"))
    cases.push_back({{"inspect", "/dev/zero"}, "inspect: /dev/zero: not a regular file (a "
                                               "character device; expected a run.h5 or "
                                               "checkpoint.pt file)"});
  check_refused(cases, tmp.str("log"));  // run_relpos gives each 120 s: a hang fails, not blocks
}

TEST_CASE("relpos: output that cannot be written is an error, not exit status 0") {
  if (!fs::exists("/dev/full")) {
    MESSAGE("no /dev/full here: the write-error check is skipped");
    return;
  }
  TempFolder tmp("cli_dev_full");
  const std::string run = tiny_trained_run(tmp);
  const std::string log = tmp.str("err.log");
  // stdout to /dev/full (every write fails with ENOSPC), stderr to the log.
  auto to_full = [&](const std::string& args, const std::string& out = "/dev/full") {
    const std::string cmd = std::string(RELPOS_BINARY) + " " + args + " > " + out + " 2> " + log;
    const int status = std::system(cmd.c_str());
    std::ifstream in(log);
    const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, err);
  };
  for (const std::string& args :
       std::vector<std::string>{"config", "inspect " + run + "/run.h5", "list", "--help"}) {
    CAPTURE(args);
    auto [code, err] = to_full(args);
    CHECK(code == 2);  // was 0
    // (with the OS's reason when the failed write was the last one: a long output fails earlier)
    CHECK_MESSAGE(contains(err, "error: could not write to standard output"), err);
  }
  auto [code, err] = to_full("config", "/dev/null");
  CHECK(code == 0);
  CHECK_MESSAGE(err.empty(), err);
}

TEST_CASE("relpos train/eval/bench: an empty --device or a malformed cuda:N is an error") {
  TempFolder tmp("cli_device");
  const std::string out = tmp.str("out");
  const std::string expected = "--device: got an empty value; expected cpu, cuda or cuda:N";
  check_refused(
      {
          // An empty --device used to mean "not given".
          {{"train", "--device", "", "--out", out}, expected},
          {{"eval", "--run", tmp.str("run"), "--device", ""}, expected},
          {{"bench", "--variants", "none", "--lengths", "16", "--device", ""}, expected},
          // These used to pass validation (anything after "cuda:" did).
          {{"config", "--set", "device=cuda:abc"},
           "command line (--set device=cuda:abc): device: unknown device (got 'cuda:abc'; "
           "expected cpu, cuda or cuda:N with N a GPU index >= 0)"},
          {{"train", "--device", "cuda:-1", "--out", out},
           "command line (--set device=cuda:-1): device: unknown device (got 'cuda:-1'; expected "
           "cpu, cuda or cuda:N with N a GPU index >= 0)"},
      },
      tmp.str("log"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("relpos train: --init-from a run that has not finished says so, and still starts") {
  TempFolder tmp("cli_init_unfinished");
  const std::string pre = tmp.str("pre");
  train_here(tiny_run(tmp.str("cache"), 4), pre, /*stop_after=*/2);
  REQUIRE_FALSE(run_finished(pre));
  std::vector<std::string> args = train_args(tiny_run(tmp.str("cache"), 2), tmp.str("ft"));
  args.erase(std::find(args.begin(), args.end(), "--quiet"));
  args.insert(args.end(), {"--init-from", pre});
  auto [code, out] = run_relpos(args, tmp.str("log"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(contains(out, "warning: --init-from " + pre +
                                  ": that run has not finished its training (no result.json)"),
                out);
  // A finished run gives no such warning.
  train_here(tiny_run(tmp.str("cache"), 2), tmp.str("pre2"));
  args.back() = tmp.str("pre2");
  args.insert(args.end(), {"--overwrite"});
  std::tie(code, out) = run_relpos(args, tmp.str("log2"));
  CHECK_MESSAGE(code == 0, out);
  CHECK_MESSAGE(!contains(out, "has not finished"), out);
}

TEST_CASE("relpos train: --resume DIR or --resume --out DIR continues a run, two folders are refused") {
  TempFolder tmp("cli_resume_dir");
  const auto sets = tiny_run(tmp.str("cache"), 4);
  const std::string a = tmp.str("a"), b = tmp.str("b");
  train_here(sets, a, /*stop_after=*/2);
  train_here(sets, b, /*stop_after=*/2);
  check_refused({{{"train", "--resume", a, "--out", b, "--quiet"},
                  "train: --resume " + a + " and --out " + b + " name different folders"},
                 {{"train", "--resume", "--quiet"},
                  "train: --resume needs the run folder: --resume DIR (or --out DIR)"},
                 {{"train", "--quiet"}, "train: --out DIR is required"}},
                tmp.str("log"));
  CHECK_FALSE(run_finished(a));  // the refused commands changed nothing
  CHECK(load_saved(a).state.step == 2);

  auto [code, out] = run_relpos({"train", "--resume", a, "--quiet"}, tmp.str("log_a"));
  CHECK_MESSAGE(code == 0, out);
  CHECK(run_finished(a));
  // Both options naming the same folder (spelled differently) is the same as either.
  std::tie(code, out) =
      run_relpos({"train", "--out", b, "--resume", b + "/", "--quiet"}, tmp.str("log_b"));
  CHECK_MESSAGE(code == 0, out);
  CHECK(run_finished(b));
  // Resumed either way, the runs end as an uninterrupted one does.
  train_here(sets, tmp.str("whole"));
  CHECK(logged(a, "train_loss") == logged(tmp.str("whole"), "train_loss"));
  CHECK(logged(b, "train_loss") == logged(tmp.str("whole"), "train_loss"));
}
