// Data-parallel training (core/dist): `relpos train --nproc 2` (two Gloo ranks on localhost)
// against one process training on the same global batch, a rank killed mid-run, resume under
// data parallelism, and the SLURM array script of `relpos sweep --emit-slurm` run by bash.
#include <doctest/doctest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/dist/distributed.h"
#include "core/dist/launch.h"
#include "core/io/run_file.h"
#include "core/model/model.h"
#include "core/train/trainer.h"
#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/dist_run.h"
#include "tests/helpers.h"
#include "tests/process_util.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test::dist;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path path;
  explicit Scratch(const std::string& name)
      : path(fs::temp_directory_path() / ("relpos_test_dist_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() { fs::remove_all(path); }
  std::string str(const std::string& sub) const { return (path / sub).string(); }
};

// Rank 0 of a two-rank group on a free local port, giving up after one second.
DistEnv rank0_of_two() {
  DistEnv e;
  e.rank = 0;
  e.world_size = 2;
  e.local_world_size = 2;
  e.master_port = free_tcp_port();
  e.timeout = std::chrono::seconds(1);
  return e;
}

}  // namespace

TEST_CASE("dist: the launch environment is read like torchrun's, and contradictions are errors") {
  // This process runs without WORLD_SIZE: one process, rank 0.
  const DistEnv e = dist_env_from_environment();
  CHECK(e.world_size == 1);
  CHECK(e.rank == 0);
  CHECK_FALSE(e.distributed());
  // The Debian LibTorch plus libgloo-dev gives the Gloo backend (docs/scaling.md); a build whose
  // configure step found no gloo headers (a pytorch.org LibTorch) has none.
  CHECK(test::gloo_built() == bool(RELPOS_EXPECT_GLOO));
  // Variables that contradict each other are a configuration error naming them.
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "2", 1);
  CHECK_THROWS_WITH_AS(dist_env_from_environment(), doctest::Contains("RANK=2 but WORLD_SIZE=2"), ConfigError);
  ::setenv("RANK", "x", 1);
  CHECK_THROWS_WITH_AS(dist_env_from_environment(), doctest::Contains("RANK='x'"), ConfigError);
  ::setenv("RANK", "1", 1);
  ::setenv("MASTER_PORT", "70000", 1);
  CHECK_THROWS_WITH_AS(dist_env_from_environment(), doctest::Contains("MASTER_PORT=70000"), ConfigError);
  ::setenv("MASTER_PORT", "29511", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("LOCAL_WORLD_SIZE", "2", 1);
  const DistEnv two = dist_env_from_environment();
  CHECK(two.rank == 1);
  CHECK(two.world_size == 2);
  CHECK(two.master_port == 29511);
  CHECK(two.local_world_size == 2);
  CHECK(two.backend.empty());
  // The backend override: gloo or nccl, nothing else.
  ::setenv("RELPOS_DIST_BACKEND", "gloo", 1);
  CHECK(dist_env_from_environment().backend == "gloo");
  ::setenv("RELPOS_DIST_BACKEND", "mpi", 1);
  CHECK_THROWS_WITH_AS(dist_env_from_environment(), doctest::Contains("RELPOS_DIST_BACKEND='mpi' (expected gloo or nccl"),
                       ConfigError);
  for (const char* v : {"WORLD_SIZE", "RANK", "MASTER_PORT", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "RELPOS_DIST_BACKEND"})
    ::unsetenv(v);
  CHECK_FALSE(dist_env_from_environment().distributed());

  // A one-process DataParallel changes nothing: the whole batch, the loss as is.
  DataParallel dp(e, torch::kCPU);
  CHECK(dp.world_size() == 1);
  CHECK(dp.is_main());
  CHECK(dp.backend() == "none");
}

TEST_CASE("dist: RELPOS_DIST_BACKEND=nccl on a CPU run is a configuration error before anything connects") {
  DistEnv e = rank0_of_two();
  e.backend = "nccl";
  CHECK_THROWS_WITH_AS(DataParallel(e, torch::kCPU), doctest::Contains("NCCL needs CUDA devices"), ConfigError);
}

TEST_CASE("dist: a rank whose peers never arrive gives up after RELPOS_DIST_TIMEOUT with an error") {
  DistEnv e = rank0_of_two();
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(DataParallel(e, torch::kCPU), doctest::Contains("joining the process group"), RunError);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited >= 0.9);  // it waited for its peer (no upper bound: the machine may be slow)
}

TEST_CASE("dist: 2 Gloo ranks train the same weights as one process on the same global batch") {
  RELPOS_SKIP_WITHOUT_GLOO();
  Scratch tmp("equal");
  const std::string cache = tmp.str("cache");
  train_one_process(tmp.str("one"), cache);

  auto args = train_args(tmp.str("two"), cache);
  args.insert(args.end(), {"--nproc", "2"});
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  // The global batch's mean loss at every step (rank 0 logs it) equals one process's.
  const auto one = train_losses(tmp.str("one")), two = train_losses(tmp.str("two"));
  REQUIRE(one.size() == 4);
  REQUIRE(two.size() == 4);  // one writer: rank 1 appended nothing
  for (size_t i = 0; i < one.size(); ++i) CHECK(two[i] == doctest::Approx(one[i]).epsilon(1e-5));
  // Adam amplifies tiny differences of the summation order a little; 4 steps stay far below
  // the size of one update (lr 1e-3 per step).
  CHECK(max_weight_difference(tmp.str("one"), tmp.str("two")) < 2e-5);
  for (const auto& f : {"config.yaml", "checkpoint.pt", "run.h5", "result.json"})
    CHECK_MESSAGE(fs::exists(tmp.path / "two" / f), f);

  // The check can fail: a run with another seed ends elsewhere.
  auto other = train_args(tmp.str("seed2"), cache);
  other.insert(other.end(), {"--set", "seed=2"});
  REQUIRE(test::call_relpos(other).exit_code == 0);
  CHECK(max_weight_difference(tmp.str("one"), tmp.str("seed2")) > 1e-3);
}

TEST_CASE("dist: a killed rank stops the run with an error naming it, and --resume under DP finishes it") {
  RELPOS_SKIP_WITHOUT_GLOO();
  Scratch tmp("fault");
  const std::string cache = tmp.str("cache");
  train_one_process(tmp.str("one"), cache);

  // Rank 1 dies by SIGKILL when it reaches step 3 (0-based: after 3 updates); the checkpoint of
  // step 2 is the last one rank 0 wrote.
  auto args = train_args(tmp.str("dp"), cache);
  args.insert(args.end(), {"--nproc", "2"});
  const ChildResult r = test::call_relpos(args, {"RELPOS_FAULT=1:3"});
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("rank 1 failed first") != std::string::npos);
  CHECK(r.err.find("SIGKILL") != std::string::npos);
  CHECK(r.err.find("--resume") != std::string::npos);
  // Rank 0 left on its own, with its own error naming the step and the operation (exit code 4),
  // before the launcher had to stop it.
  CHECK(r.err.find("rank 0 of 2: the gradient all-reduce of step") != std::string::npos);
  CHECK(r.err.find("rank 0 exit 4") != std::string::npos);
  CHECK(r.err.find("stopped by the launcher") == std::string::npos);
  REQUIRE(fs::exists(run_checkpoint_path(tmp.str("dp"))));
  CHECK_FALSE(run_finished(tmp.str("dp")));

  const ChildResult rr =
      test::call_relpos({"train", "--quiet", "--resume", "--out", tmp.str("dp"), "--nproc", "2"});
  INFO(rr.err);
  REQUIRE(rr.exit_code == 0);
  CHECK(run_finished(tmp.str("dp")));
  const auto one = train_losses(tmp.str("one")), dp = train_losses(tmp.str("dp"));
  REQUIRE(dp.size() == one.size());
  for (size_t i = 0; i < one.size(); ++i) CHECK(dp[i] == doctest::Approx(one[i]).epsilon(1e-5));
  CHECK(max_weight_difference(tmp.str("one"), tmp.str("dp")) < 2e-5);
}

TEST_CASE("dist: a hung rank makes the others give up after RELPOS_DIST_TIMEOUT, and the launcher stops it") {
  RELPOS_SKIP_WITHOUT_GLOO();
  Scratch tmp("hang");
  // Rank 1 stops itself (SIGSTOP) at step 2: its sockets stay open, so rank 0 can only learn of
  // it from the collective's timeout (20 s here instead of 600: long enough that rank 1, slowed
  // by a busy machine, is never taken for hung before step 2).
  auto args = train_args(tmp.str("dp"), tmp.str("cache"));
  args.insert(args.end(), {"--nproc", "2"});
  const ChildResult r =
      test::call_relpos(args, {"RELPOS_FAULT=1:2:hang", "RELPOS_DIST_TIMEOUT=20"});
  INFO(r.err);
  CHECK(r.exit_code != 0);
  // Steps are 1-based in messages: the all-reduce of the step rank 1 never reached.
  CHECK(r.err.find("rank 0 of 2: the gradient all-reduce of step 3") != std::string::npos);
  CHECK(r.err.find("RELPOS_DIST_TIMEOUT=20s") != std::string::npos);
  // The report points at the hung rank, not at the one that timed out waiting for it.
  CHECK(r.err.find("rank 0 lost its peer first, while rank 1 still ran (hung?)") != std::string::npos);
  CHECK(r.err.find("rank 0 exit 4") != std::string::npos);
  // The stopped rank cannot act on SIGTERM: the launcher's SIGKILL ends it.
  CHECK(r.err.find("rank 1 killed by SIGKILL") != std::string::npos);
  CHECK(r.err.find("stopped by the launcher") != std::string::npos);
  CHECK_FALSE(run_finished(tmp.str("dp")));
}

TEST_CASE("dist: a global batch that does not split over the ranks is refused before any rank starts") {
  Scratch tmp("split");
  auto args = train_args(tmp.str("run"), tmp.str("cache"));
  args.insert(args.end(), {"--set", "train.batch_size=5", "--nproc", "2"});
  const ChildResult r = test::call_relpos(args);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("train.batch_size: 5 does not split over 2 ranks") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.path / "run"));
}

TEST_CASE("dist: device cuda without CUDA is a clear configuration error") {
  if (torch::cuda::is_available()) return;  // CI is CPU-only; on a GPU machine there is no error
  CHECK_THROWS_WITH_AS(parse_device("cuda"), doctest::Contains("CUDA is not available"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_device("cuda:1"), doctest::Contains("CUDA is not available"), ConfigError);
  CHECK(parse_device("cpu") == torch::Device(torch::kCPU));
}

TEST_CASE("sweep: the SLURM array script runs a grid point's training when bash runs it") {
  Scratch tmp("slurm");
  const std::string cache = tmp.str("cache"), script = tmp.str("job.sh"), out = tmp.str("exp");
  std::vector<std::string> args{"sweep", "--out", out, "--emit-slurm", script, "--grid", "seed=1,2",
                                "--config", test::config_path("base.yaml")};
  for (const auto& s : tiny_sets(cache)) args.insert(args.end(), {"--set", s});
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(script);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("#SBATCH --array=0-1") != std::string::npos);
  CHECK(fs::is_directory(out));  // SLURM writes its logs there but does not create it

  // What one array element does: train grid point 1, then skip it when it is finished.
  const std::string bash = "/bin/bash";
  const ChildResult job =
      test::call_program(bash, {script}, {"SLURM_ARRAY_TASK_ID=1", "SLURM_CPUS_PER_TASK=1"});
  INFO(job.err);
  REQUIRE(job.exit_code == 0);
  std::string point;
  for (const auto& e : fs::directory_iterator(out))
    if (fs::is_directory(e.path())) point = e.path().string();
  REQUIRE_FALSE(point.empty());
  CHECK(run_finished(point));
  CHECK(load_run_config(point).config.seed == 2);
  const ChildResult again = test::call_program(bash, {script}, {"SLURM_ARRAY_TASK_ID=1"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("already finished") != std::string::npos);
  // An index outside the grid is an error, not a silent success.
  CHECK(test::call_program(bash, {script}, {"SLURM_ARRAY_TASK_ID=7"}).exit_code != 0);
}

TEST_CASE("dist: Ctrl-C to the launcher stops every rank at one step with rank 0's checkpoint") {
  RELPOS_SKIP_WITHOUT_GLOO();
  Scratch tmp("sigint");
  const std::string dir = tmp.str("dp"), log = tmp.str("launcher.log");
  std::vector<std::string> args = train_args(dir, tmp.str("cache"));
  args.insert(args.end(), {"--set", "train.steps=100000", "--set", "train.checkpoint_every=100000",
                           "--nproc", "2"});
  test::Child launcher(args, log);
  // Wait until the ranks train (rank 0 has logged a step), then interrupt the launcher only.
  REQUIRE_MESSAGE(test::wait_until([&] { return train_losses_if_any(dir) >= 2; }, test::kPatienceS,
                                   [&] { return launcher.running(); }),
                  launcher.output());
  launcher.signal(SIGINT);
  const int code = launcher.wait();
  const std::string err = launcher.output();
  INFO(err);
  CHECK(code == 130);  // 128 + SIGINT, from the launcher's own exit (docs/reliability.md)
  CHECK(err.find("interrupted") != std::string::npos);
  CHECK(err.find("--resume") != std::string::npos);
  REQUIRE(fs::exists(run_checkpoint_path(dir)));
  CHECK_FALSE(run_finished(dir));
  const int64_t logged = train_losses_if_any(dir);
  CHECK(logged >= 2);

  // Resume (under DP) for two more steps: the log continues from the checkpoint's step with no
  // step written twice, so rank 0 checkpointed the step the ranks agreed to stop at.
  const ChildResult rr =
      test::call_relpos({"train", "--quiet", "--resume", "--out", dir, "--nproc", "2", "--set",
                         "train.steps=" + std::to_string(logged + 2)});
  INFO(rr.err);
  REQUIRE(rr.exit_code == 0);
  CHECK(run_finished(dir));
  std::ifstream metrics(run_metrics_path(dir));
  int64_t expect = 1;
  for (std::string line; std::getline(metrics, line); ++expect)
    CHECK(nlohmann::json::parse(line).at("step").get<int64_t>() == expect);
  CHECK(expect - 1 == logged + 2);
}

TEST_CASE("dist: a global batch without a target token on any rank is named as such, as in one process") {
  RELPOS_SKIP_WITHOUT_GLOO();
  Scratch tmp("no_target");
  // WordPiece with one word besides the specials, on text where it is rare: most rows of 7
  // tokens hold nothing mlm can mask (docs/reliability.md). One row per rank.
  const std::string vocab = tmp.str("vocab.txt");
  std::ofstream(vocab) << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n";
  const std::string corpus = tmp.str("rare.txt");
  {
    std::ofstream out(corpus);
    for (int i = 0; i < 3000; ++i) out << (i % 100 == 0 ? "the " : "zzz ");
  }
  auto args = train_args(tmp.str("run"), tmp.str("cache"));
  for (const std::string& s : {"data.corpus=" + corpus, std::string("data.tokenizer=wordpiece"),
                              "data.vocab_file=" + vocab, std::string("task.seq_len=8"),
                              std::string("train.batch_size=2"), std::string("position.type=none")})
    args.insert(args.end(), {"--set", s});
  args.insert(args.end(), {"--nproc", "2"});
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  CHECK(r.exit_code != 0);
  // It used to say only "the loss is not finite (nan)", as if the learning rate were to blame.
  CHECK(r.err.find(": the batch has no target token, so its loss is not finite (nan)") !=
        std::string::npos);
}
