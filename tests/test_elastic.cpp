// `relpos train --nproc 2 --max-restarts R` (core/dist/elastic.h): a rank killed mid-run, or one
// that hangs, is restarted with the others from the last checkpoint and the run ends where an
// uninterrupted one ends; the restarts are recorded; R exhausted fails with every attempt's
// reason; bad values.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "core/dist/launch.h"
#include "core/util/process.h"
#include "tests/child_log.h"
#include "tests/dist_run.h"
#include "tests/helpers.h"
#include "tests/process_util.h"
#include "tests/text_file.h"
#include "tests/tiny_run.h"

using namespace relpos;
using namespace relpos::test::dist;
namespace fs = std::filesystem;

namespace {

std::vector<nlohmann::json> metrics_lines(const std::string& dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run_metrics_path(dir));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The run in `dir` ended as the one-process run in `one`: the same loss at every step and the
// same final weights.
void check_as_uninterrupted(const std::string& one, const std::string& dir) {
  const auto a = train_losses(one), b = train_losses(dir);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == a.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-5));
  CHECK(max_weight_difference(one, dir) < 2e-5);
}

// result.json's "restarts" records.
nlohmann::json restart_records(const std::string& dir) {
  std::ifstream in(run_result_path(dir));
  return nlohmann::json::parse(in).at("restarts");
}

}  // namespace

TEST_CASE("elastic: a rank killed mid-run is restarted from the checkpoint and ends as an uninterrupted run") {
  RELPOS_SKIP_WITHOUT_GLOO();
  test::TempFolder tmp("elastic_restart");
  const std::string cache = tmp.str("cache"), dir = tmp.str("dp");
  train_one_process(tmp.str("one"), cache);

  // Rank 1 SIGKILLs itself at step 3 (after 3 updates) on the first attempt only; rank 0's last
  // checkpoint is step 2's (train.checkpoint_every=2).
  auto args = train_args(dir, cache);
  args.insert(args.end(), {"--nproc", "2", "--max-restarts", "1"});
  const ChildResult r = test::call_relpos(args, {"RELPOS_FAULT=1:3"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(test::contains(r.err, "attempt 1 failed: rank 1 failed first (rank 1 killed by SIGKILL"));
  // Rank 0 left on its own when its peer's sockets closed: it did not wait for a collective's
  // timeout, or the launcher would have stopped it.
  CHECK(test::contains(r.err, "; rank 0 exit 4 after "));
  CHECK_FALSE(test::contains(r.err, "stopped by the launcher"));
  CHECK(test::contains(r.err, "restart 1 of 1: all ranks resume from the checkpoint of step 2"));
  REQUIRE(run_finished(dir));

  // The losses of every step and the final weights are the one-process run's.
  check_as_uninterrupted(tmp.str("one"), dir);

  // metrics.jsonl: steps 1, 2, the restart, steps 3 and 4 (the step-3 line of the failed attempt
  // was dropped on resuming; the event line was kept in its place).
  const auto lines = metrics_lines(dir);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].at("step") == 1);
  CHECK(lines[1].at("step") == 2);
  CHECK(lines[3].at("step") == 3);
  CHECK(lines[4].at("step") == 4);
  const auto& ev = lines[2];
  CHECK(ev.at("event") == "restart");
  CHECK(ev.at("attempt") == 1);
  CHECK(ev.at("resumed_from_step") == 2);
  CHECK(test::contains(ev.at("reason").get<std::string>(),
                       "rank 1 failed first (rank 1 killed by SIGKILL"));
  CHECK(std::regex_match(ev.at("time").get<std::string>(),
                         std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));

  // result.json holds the same record.
  const auto records = restart_records(dir);
  REQUIRE(records.size() == 1);
  const auto& rec = records[0];
  CHECK(rec.at("attempt") == 1);
  CHECK(rec.at("resumed_from_step") == 2);
  CHECK(rec.at("reason") == ev.at("reason"));
  CHECK(rec.at("time") == ev.at("time"));
}

TEST_CASE(
    "elastic: a hung rank is stopped and restarted with the others, and the run ends as "
    "an uninterrupted one") {
  RELPOS_SKIP_WITHOUT_GLOO();
  test::TempFolder tmp("elastic_hang");
  const std::string cache = tmp.str("cache"), dir = tmp.str("dp");
  train_one_process(tmp.str("one"), cache);

  // Rank 1 stops itself (SIGSTOP) at step 3 on the first attempt: its sockets stay open, so rank
  // 0 learns of it only from the all-reduce's timeout (20 s: long enough that a rank slowed by a
  // busy machine is never taken for hung); the launcher then kills the stopped rank and restarts
  // both from step 2's checkpoint.
  auto args = train_args(dir, cache);
  args.insert(args.end(), {"--nproc", "2", "--max-restarts", "1"});
  const ChildResult r =
      test::call_relpos(args, {"RELPOS_FAULT=1:3:hang", "RELPOS_DIST_TIMEOUT=20"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(test::contains(r.err,
                       "attempt 1 failed: rank 0 lost its peer first, while rank 1 "
                       "still ran (hung?)"));
  CHECK(test::contains(r.err, "rank 1 killed by SIGKILL"));
  CHECK(test::contains(r.err, "restart 1 of 1: all ranks resume from the checkpoint of step 2"));
  REQUIRE(run_finished(dir));
  check_as_uninterrupted(tmp.str("one"), dir);
  const auto records = restart_records(dir);
  REQUIRE(records.size() == 1);
  CHECK(records[0].at("resumed_from_step") == 2);
  CHECK(test::contains(records[0].at("reason").get<std::string>(), "(hung?)"));
}

TEST_CASE(
    "elastic: two nodes' launchers (on one machine) both restart when a rank of node 1 "
    "dies, and the run ends as an uninterrupted one") {
  RELPOS_SKIP_WITHOUT_GLOO();
  test::TempFolder tmp("elastic_nodes");
  const std::string cache = tmp.str("cache"), dir = tmp.str("dp");
  train_one_process(tmp.str("one"), cache);

  // `--nnodes 2 --nproc 1`: global rank 1 is node 1's only rank; it SIGKILLs itself at step 3 on
  // the first attempt. Node 0's rank loses its peer, so both launchers fail the attempt and
  // restart, and the ranks meet again at the same port. Node 0 writes the records.
  const std::string port = std::to_string(free_tcp_port());
  const auto node = [&](const std::string& rank) {
    auto args = train_args(dir, cache);
    args.insert(args.end(), {"--nproc", "1", "--nnodes", "2", "--node-rank", rank, "--master-addr",
                             "127.0.0.1", "--master-port", port, "--max-restarts", "1"});
    return test::call_relpos(args, {"RELPOS_FAULT=1:3", "RELPOS_DIST_TIMEOUT=30"});
  };
  auto second = std::async(std::launch::async, node, "1");
  const ChildResult r0 = node("0");
  const ChildResult r1 = second.get();
  INFO(r0.err);
  INFO(r1.err);
  REQUIRE(r0.exit_code == 0);
  REQUIRE(r1.exit_code == 0);
  // Node 1 saw its rank die; node 0 saw its own rank lose the peer.
  CHECK(test::contains(r1.err, "attempt 1 failed: rank 1 failed first (rank 1 killed by SIGKILL"));
  CHECK(test::contains(r0.err, "attempt 1 failed: rank 0 failed first (rank 0 exit 4"));
  for (const auto* r : {&r0, &r1})
    CHECK(test::contains(r->err, "restart 1 of 1: all ranks resume from the checkpoint of step 2"));
  REQUIRE(run_finished(dir));
  check_as_uninterrupted(tmp.str("one"), dir);
  // One record, node 0's (not one per node).
  const auto records = restart_records(dir);
  REQUIRE(records.size() == 1);
  CHECK(records[0].at("resumed_from_step") == 2);
  int64_t events = 0;
  for (const auto& line : metrics_lines(dir)) events += line.contains("event");
  CHECK(events == 1);
}

TEST_CASE("elastic: --max-restarts 0 ends the run at the first failure, as without it") {
  RELPOS_SKIP_WITHOUT_GLOO();
  test::TempFolder tmp("elastic_zero");
  const std::string dir = tmp.str("dp");
  auto args = train_args(dir, tmp.str("cache"));
  args.insert(args.end(), {"--nproc", "2", "--max-restarts", "0"});
  const ChildResult r = test::call_relpos(args, {"RELPOS_FAULT=1:3"});
  INFO(r.err);
  CHECK(r.exit_code == 2);  // every relpos error (RunError included) exits 2
  CHECK(test::contains(
      r.err, "error: data-parallel run failed: rank 1 failed first (rank 1 killed by SIGKILL"));
  CHECK(test::contains(r.err, "--resume"));
  CHECK_FALSE(test::contains(r.err, "restart"));
  CHECK_FALSE(run_finished(dir));
  for (const auto& line : metrics_lines(dir)) CHECK_FALSE(line.contains("event"));
}

TEST_CASE("elastic: when the restarts are used up the error lists every attempt's reason") {
  RELPOS_SKIP_WITHOUT_GLOO();
  test::TempFolder tmp("elastic_exhausted");
  const std::string dir = tmp.str("dp");
  // `always`: rank 1 dies at step 3 on every attempt, and every restart resumes from step 2.
  auto args = train_args(dir, tmp.str("cache"));
  args.insert(args.end(), {"--nproc", "2", "--max-restarts", "2"});
  const ChildResult r = test::call_relpos(args, {"RELPOS_FAULT=1:3:always"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(
      test::contains(r.err, "error: data-parallel run failed after 2 restarts (--max-restarts 2)"));
  for (const std::string n : {"1", "2", "3"})
    CHECK_MESSAGE(test::contains(r.err, "\n  attempt " + n +
                                            ": rank 1 failed first (rank 1 killed by SIGKILL"),
                  n);
  CHECK_FALSE(test::contains(r.err, "attempt 4"));
  CHECK(test::contains(r.err, "continue from the last checkpoint with: relpos train --resume"));
  CHECK_FALSE(run_finished(dir));
  // Two restart events, each from step 2.
  int64_t events = 0;
  for (const auto& line : metrics_lines(dir))
    if (line.contains("event")) {
      ++events;
      CHECK(line.at("attempt") == events);
      CHECK(line.at("resumed_from_step") == 2);
    }
  CHECK(events == 2);
}

TEST_CASE("elastic: ranks that fail before touching the run folder are not restarted") {
  RELPOS_SKIP_WITHOUT_GLOO();
  test::TempFolder tmp("elastic_early");
  const std::string dir = tmp.str("dp");
  fs::create_directories(dir);
  std::ofstream(dir + "/config.yaml") << "seed: 1\n";  // another run's folder: refused by the ranks
  auto args = train_args(dir, tmp.str("cache"));
  args.insert(args.end(), {"--nproc", "2", "--max-restarts", "3"});
  const ChildResult r = test::call_relpos(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(test::contains(
      r.err, "data-parallel run failed after 0 restarts (--max-restarts 3)\n  attempt 1: rank"));
  CHECK(test::contains(
      r.err, "not restarted: the ranks failed before this launch wrote a checkpoint or config"));
  CHECK_FALSE(test::contains(r.err, "attempt 2"));
  // The other run's folder is untouched: no --overwrite behind the user's back.
  std::ifstream in(dir + "/config.yaml");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "seed: 1\n");
}

TEST_CASE("elastic: bad --max-restarts values are refused with exit 2 and a message") {
  test::TempFolder tmp("elastic_bad");
  const auto base = train_args(tmp.str("dp"), tmp.str("cache"));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--nproc", "2", "--max-restarts", "-1"}, "--max-restarts: got -1; expected an integer >= 0"},
      // Not an integer: CLI11's conversion message, as for every integer option.
      {{"--nproc", "2", "--max-restarts", "1.5"}, "Could not convert: --max-restarts = 1.5"},
      {{"--nproc", "2", "--max-restarts", "x"}, "Could not convert: --max-restarts = x"},
      {{"--max-restarts", "1"}, "train: --max-restarts applies to a data-parallel launch only"},
  };
  for (const auto& c : cases) {
    const auto& extra = c.first;
    const std::string message = c.second;
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const ChildResult r = test::call_relpos(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(test::contains(r.err, message), message);
    CHECK_FALSE(fs::exists(tmp.path / "dp"));
  }
}

TEST_CASE(
    "elastic: a job its launcher restarts (torchrun, a requeued SLURM job) continues from the "
    "checkpoint") {
  // The first attempt dies at step 3 (checkpoint of step 2 on disk); torchrun's restart runs the
  // very same command again with TORCHELASTIC_RESTART_COUNT=1, SLURM's with SLURM_RESTART_COUNT.
  test::TempFolder tmp("launcher_restart");
  const std::string cache = tmp.str("cache");
  train_one_process(tmp.str("one"), cache);
  for (const char* var : {"TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT"}) {
    CAPTURE(var);
    const std::string dir = tmp.str(std::string("dp_") + var);
    const auto args = train_args(dir, cache);
    const ChildResult first = test::call_relpos(args, {"RELPOS_FAULT=0:3"});
    REQUIRE(first.exit_code != 0);
    REQUIRE(fs::exists(run_checkpoint_path(dir)));
    REQUIRE_FALSE(run_finished(dir));
    // Without the launcher's count the same command refuses the unfinished folder, as before.
    const ChildResult plain = test::call_relpos(args);
    CHECK(plain.exit_code == 2);
    CHECK(test::contains(plain.err, "holds an unfinished run"));
    const ChildResult again = test::call_relpos(args, {std::string(var) + "=1"});
    INFO(again.err);
    REQUIRE(again.exit_code == 0);
    CHECK(test::contains(again.err, "the launcher restarted this job (1 restart(s)): continuing " +
                                        dir + " from its checkpoint"));
    check_as_uninterrupted(tmp.str("one"), dir);
  }
  // A restart count in a folder that holds no checkpoint starts the run as the command says.
  const std::string fresh = tmp.str("fresh");
  const ChildResult r =
      test::call_relpos(train_args(fresh, cache), {"TORCHELASTIC_RESTART_COUNT=2"});
  CHECK(r.exit_code == 0);
  CHECK_FALSE(test::contains(r.err, "the launcher restarted"));
  check_as_uninterrupted(tmp.str("one"), fresh);
}
