#include "core/dist/train_launch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/dist/distributed.h"
#include "core/dist/elastic.h"
#include "core/dist/launch.h"
#include "core/io/run_paths.h"
#include "core/util/errors.h"
#include "core/util/signals.h"
#include "core/util/system.h"

namespace relpos {
namespace {

// How many times a launcher has restarted this job: torchrun's TORCHELASTIC_RESTART_COUNT, or
// SLURM_RESTART_COUNT in a requeued SLURM job; 0 on the first attempt or with neither.
int64_t launcher_restart_count() {
  for (const char* var : {"TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (*end == '\0' && n > 0) return n;
  }
  return 0;
}

// The launch plan: every rank's command, the command a restart runs (resume from the run folder:
// its own config.yaml, --set still applied) and, for a new run without a checkpoint yet, the one
// that starts it over.
ElasticOptions elastic_options(const TrainCommand& command, const DataParallelOptions& o) {
  ElasticOptions eo;
  LaunchOptions& lo = eo.launch;
  lo.nproc = o.nproc;
  lo.nnodes = o.nnodes;
  lo.node_rank = o.node_rank;
  lo.master_addr = o.master_addr;
  lo.master_port = o.master_port;
  lo.args = command.argv();
  TrainCommand resume = command;
  resume.resume = true;
  resume.overwrite = false;
  resume.init_from.clear();
  resume.configs.clear();
  eo.resume_args = resume.argv();
  if (!command.resume) {
    TrainCommand fresh = command;
    fresh.overwrite = true;
    eo.fresh_args = fresh.argv();
  }
  eo.run_dir = command.out_dir;
  eo.max_restarts = o.max_restarts;
  eo.write_records = o.node_rank == 0;
  return eo;
}

// The error of a launch that did not finish: interrupted at a checkpoint, or failed.
[[noreturn]] void throw_launch_failure(const ElasticResult& er, const TrainCommand& command,
                                       const DataParallelOptions& o) {
  const LaunchResult& r = er.last;
  const std::string resume_cmd = fmt::format(
      "relpos train --resume --out {} --nproc {}{}", command.out_dir, o.nproc,
      o.nnodes > 1 ? " (with the same --nnodes/--node-rank/--master-* on each node)" : "");
  if (r.interrupted)  // exit 128 + signal, as one process interrupted (core/util/signals.h)
    throw Interrupted(interrupt_signal(),
                      fmt::format("interrupted: the ranks stopped at one step and rank 0 saved "
                                  "its checkpoint in {} ({})",
                                  command.out_dir, r.summary()),
                      "continue with: " + resume_cmd);
  // A rank may have failed before rank 0 wrote any checkpoint (a missing corpus, a bad folder).
  const bool has_checkpoint = std::filesystem::exists(run_checkpoint_path(command.out_dir));
  std::string what = "data-parallel run failed: " + r.failure();
  if (o.max_restarts > 0) {
    what = fmt::format("data-parallel run failed after {} restart{} (--max-restarts {})",
                       er.restarts.size(), er.restarts.size() == 1 ? "" : "s", o.max_restarts);
    for (size_t i = 0; i < er.failures.size(); ++i)
      what += fmt::format("\n  attempt {}: {}", i + 1, er.failures[i]);
    if (!er.not_restarted.empty()) what += "\n  not restarted: " + er.not_restarted;
  }
  throw RunError(what,
                 has_checkpoint ? "the ranks' own errors are printed above; after fixing the cause, "
                                  "continue from the last checkpoint with: " + resume_cmd
                                : "the ranks' own errors are printed above; no checkpoint was "
                                  "written, so run the same command again after fixing the cause");
}

}  // namespace

std::vector<std::string> TrainCommand::argv() const {
  std::vector<std::string> cmd{self_executable(), "train", "--out", out_dir};
  for (const auto& c : configs) cmd.insert(cmd.end(), {"--config", c});
  for (const auto& s : sets) cmd.insert(cmd.end(), {"--set", s});
  if (resume) cmd.push_back("--resume");
  if (overwrite) cmd.push_back("--overwrite");
  if (!init_from.empty()) cmd.insert(cmd.end(), {"--init-from", init_from});
  if (!device.empty()) cmd.insert(cmd.end(), {"--device", device});
  if (quiet) cmd.push_back("--quiet");
  return cmd;
}

int launch_training(const TrainCommand& command, const DataParallelOptions& o,
                    int64_t global_batch) {
  if (dist_env_from_environment().distributed())
    throw ConfigError("train: --nproc starts its own ranks, but WORLD_SIZE is already set",
                      "run `relpos train` without --nproc under torchrun/srun, or unset WORLD_SIZE");
  const int64_t world = o.nproc * o.nnodes;
  if (global_batch % world != 0)
    throw ConfigError(
        fmt::format("train.batch_size: {} does not split over {} ranks", global_batch, world),
        "train.batch_size is the global batch: use a multiple of the number of ranks");
  const ElasticOptions eo = elastic_options(command, o);
  const ElasticResult er = launch_elastic(eo);
  if (!er.last.ok()) throw_launch_failure(er, command, o);
  const std::string result = run_result_path(command.out_dir);
  if (eo.write_records && o.max_restarts > 0 && std::filesystem::exists(result))
    record_restarts_in_result(command.out_dir, er.restarts);
  if (!er.restarts.empty())
    std::cerr << fmt::format("relpos: finished after {} restart{} (recorded in {})\n",
                             er.restarts.size(), er.restarts.size() > 1 ? "s" : "", result);
  return 0;
}

void resume_after_launcher_restart(TrainCommand& c) {
  const int64_t restarts = launcher_restart_count();
  if (c.resume || restarts == 0 || c.out_dir.empty() ||
      !std::filesystem::exists(run_checkpoint_path(c.out_dir)) || run_finished(c.out_dir))
    return;
  c.resume = true;
  c.overwrite = false;
  c.init_from.clear();
  c.configs.clear();
  if (dist_env_from_environment().rank == 0)
    std::cerr << fmt::format(
        "train: the launcher restarted this job ({} restart(s)): continuing {} from its "
        "checkpoint, as --resume does\n",
        restarts, c.out_dir);
}

}  // namespace relpos
