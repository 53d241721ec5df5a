// relpos train: one training run into a run folder (see core/train/trainer.h); with --nproc N,
// N data-parallel ranks on this machine (core/dist/launch.h, docs/scaling.md).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "core/dist/distributed.h"
#include "core/dist/elastic.h"
#include "core/dist/launch.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"
#include "core/util/system.h"
#include "core/util/signals.h"

namespace relpos::app {

namespace {

struct LaunchArgs {
  int64_t nproc = 1, nnodes = 1, node_rank = 0, master_port = 0, max_restarts = 0;
  std::string master_addr = "127.0.0.1";
};

// The command every rank runs: this one without the launch options.
std::vector<std::string> rank_command(const ConfigArgs& args, const TrainOptions& o,
                                      const std::string& device) {
  std::vector<std::string> cmd{self_executable(), "train", "--out", o.out_dir};
  for (const auto& c : args.configs) cmd.insert(cmd.end(), {"--config", c});
  for (const auto& s : args.sets) cmd.insert(cmd.end(), {"--set", s});
  if (o.resume) cmd.push_back("--resume");
  if (o.overwrite) cmd.push_back("--overwrite");
  if (!o.init_from.empty()) cmd.insert(cmd.end(), {"--init-from", o.init_from});
  if (!device.empty()) cmd.insert(cmd.end(), {"--device", device});
  if (o.quiet) cmd.push_back("--quiet");
  return cmd;
}

int launch(const ConfigArgs& args, const TrainOptions& o, const std::string& device,
           const LaunchArgs& l, const Config& cfg) {
  if (dist_env_from_environment().distributed())
    throw ConfigError("train: --nproc starts its own ranks, but WORLD_SIZE is already set",
                      "run `relpos train` without --nproc under torchrun/srun, or unset WORLD_SIZE");
  const int64_t world = l.nproc * l.nnodes;
  if (cfg.train.batch_size % world != 0)
    throw ConfigError(fmt::format("train.batch_size: {} does not split over {} ranks",
                                  cfg.train.batch_size, world),
                      "train.batch_size is the global batch: use a multiple of the number of ranks");
  ElasticOptions eo;
  LaunchOptions& lo = eo.launch;
  lo.nproc = l.nproc;
  lo.nnodes = l.nnodes;
  lo.node_rank = l.node_rank;
  lo.master_addr = l.master_addr;
  lo.master_port = l.master_port;
  lo.args = rank_command(args, o, device);
  // A restart resumes the run from its folder (its own config.yaml, --set still applied), or,
  // for a new run without a checkpoint yet, starts it over.
  TrainOptions resume = o;
  resume.resume = true;
  resume.overwrite = false;
  resume.init_from.clear();
  ConfigArgs resume_config = args;
  resume_config.configs.clear();
  eo.resume_args = rank_command(resume_config, resume, device);
  if (!o.resume) {
    TrainOptions fresh = o;
    fresh.overwrite = true;
    eo.fresh_args = rank_command(args, fresh, device);
  }
  eo.run_dir = o.out_dir;
  eo.max_restarts = l.max_restarts;
  eo.write_records = l.node_rank == 0;
  const ElasticResult er = launch_elastic(eo);
  const LaunchResult& r = er.last;
  if (r.ok()) {
    if (eo.write_records && l.max_restarts > 0 && std::filesystem::exists(run_result_path(o.out_dir)))
      record_restarts_in_result(o.out_dir, er.restarts);
    if (!er.restarts.empty())
      std::cerr << fmt::format("relpos: finished after {} restart{} (recorded in {})\n",
                               er.restarts.size(), er.restarts.size() > 1 ? "s" : "",
                               run_result_path(o.out_dir));
    return 0;
  }
  const std::string resume_cmd =
      fmt::format("relpos train --resume --out {} --nproc {}{}", o.out_dir, l.nproc,
                  l.nnodes > 1 ? " (with the same --nnodes/--node-rank/--master-* on each node)" : "");
  if (r.interrupted)  // exit 128 + signal, as one process interrupted (core/util/signals.h)
    throw Interrupted(interrupt_signal(),
                      fmt::format("interrupted: the ranks stopped at one step and rank 0 saved "
                                  "its checkpoint in {} ({})",
                                  o.out_dir, r.summary()),
                      "continue with: " + resume_cmd);
  // A rank may have failed before rank 0 wrote any checkpoint (a missing corpus, a bad folder).
  const bool has_checkpoint = std::filesystem::exists(run_checkpoint_path(o.out_dir));
  std::string what = "data-parallel run failed: " + r.failure();
  if (l.max_restarts > 0) {
    what = fmt::format("data-parallel run failed after {} restart{} (--max-restarts {})",
                       er.restarts.size(), er.restarts.size() == 1 ? "" : "s", l.max_restarts);
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

// A job restarted by its launcher (torchrun --max-restarts, a requeued SLURM job) runs the very
// command of its first attempt: when that attempt left a checkpoint in the run folder, continue
// from it as --resume does (the run's own config.yaml; --config, --overwrite and --init-from
// belonged to the first attempt), and say so. Without a checkpoint nothing changes.
void resume_after_launcher_restart(TrainOptions& o, ConfigArgs& args) {
  const int64_t restarts = launcher_restart_count();
  if (o.resume || restarts == 0 || o.out_dir.empty() ||
      !std::filesystem::exists(run_checkpoint_path(o.out_dir)) || run_finished(o.out_dir))
    return;
  o.resume = true;
  o.overwrite = false;
  o.init_from.clear();
  args.configs.clear();
  if (dist_env_from_environment().rank == 0)
    std::cerr << fmt::format(
        "train: the launcher restarted this job ({} restart(s)): continuing {} from its "
        "checkpoint, as --resume does\n",
        restarts, o.out_dir);
}

// The run folder from --out and --resume [DIR]: either names it; both must name the same one.
void resolve_run_folder(TrainOptions& o, const std::string& resume_dir) {
  if (!resume_dir.empty()) {
    std::error_code ec;
    if (!o.out_dir.empty() && o.out_dir != resume_dir &&
        !std::filesystem::equivalent(o.out_dir, resume_dir, ec))
      throw ConfigError(fmt::format("train: --resume {} and --out {} name different folders",
                                    resume_dir, o.out_dir),
                        "give the run folder once: relpos train --resume DIR");
    o.out_dir = resume_dir;
  }
  if (o.out_dir.empty())
    throw ConfigError(o.resume ? "train: --resume needs the run folder: --resume DIR (or --out DIR)"
                               : "train: --out DIR is required",
                      o.resume ? "relpos train --resume DIR" : "the folder the run writes into");
}

}  // namespace

Command add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train one model into a run folder");
  auto args = std::make_shared<ConfigArgs>();
  auto opts = std::make_shared<TrainOptions>();
  auto device = std::make_shared<std::string>();
  auto l = std::make_shared<LaunchArgs>();
  auto resume_dir = std::make_shared<std::string>();
  args->add_to(cmd);
  cmd->add_option("--out,-o", opts->out_dir, "run folder to write (or to resume)");
  // `--resume DIR` and `--resume --out DIR` are the same; an empty value means "not given".
  auto* resume = cmd->add_option("--resume", *resume_dir,
                                 "continue a run from its checkpoint: --resume DIR, or --resume "
                                 "with --out DIR")
                     ->expected(0, 1);
  cmd->add_flag("--overwrite", opts->overwrite, "replace a run already in --out");
  cmd->add_option("--init-from", opts->init_from,
                  "initialise parameters shared by name from this run folder (fine-tuning)");
  cmd->add_option("--device", *device, "cpu, cuda or cuda:N (same as --set device=...)")
      ->check(non_empty("cpu, cuda or cuda:N"));  // "" used to mean "not given"
  cmd->add_flag("--quiet,-q", opts->quiet, "no progress line");
  cmd->add_option("--nproc", l->nproc,
                  "data-parallel: start this many ranks on this machine (train.batch_size is the "
                  "global batch; docs/scaling.md)")
      ->check(at_least_one());
  cmd->add_option("--nnodes", l->nnodes, "with --nproc: nodes, each running the same command")
      ->check(at_least_one());
  auto* node_rank =
      cmd->add_option("--node-rank", l->node_rank, "with --nnodes: this node's index (0 = the master)")
          ->check(integer_in(0));
  auto* master_addr = cmd->add_option("--master-addr", l->master_addr,
                                      "with --nnodes: node 0's address")
                          ->check(non_empty("an address"));
  auto* master_port =
      cmd->add_option("--master-port", l->master_port,
                      "with --nproc or --nnodes: a free port on node 0, 1..65535 (default with "
                      "one node: a free port of this machine)")
          ->check(integer_in(1, 65535));
  auto* max_restarts =
      cmd->add_option("--max-restarts", l->max_restarts,
                      "with --nproc or --nnodes: when a rank fails or hangs, restart all ranks from "
                      "the last checkpoint, up to this many times (default 0; docs/scaling.md)")
          ->check(integer_in(0));
  return {cmd, [args, opts, device, l, node_rank, master_addr, master_port, max_restarts, resume,
                resume_dir]() {
            opts->resume = resume->count() > 0;
            resolve_run_folder(*opts, *resume_dir);
            resume_after_launcher_restart(*opts, *args);
            // The launch options mean something only to a data-parallel launch: never ignored.
            if (node_rank->count() > 0 && l->node_rank >= l->nnodes)
              throw ConfigError(fmt::format("train: --node-rank {}: expected 0..{} (--nnodes is {})",
                                            l->node_rank, l->nnodes - 1, l->nnodes),
                                "--node-rank numbers the nodes of --nnodes N, each running "
                                "--nproc ranks (docs/scaling.md)");
            for (const auto* opt : {master_addr, master_port, max_restarts})
              if (opt->count() > 0 && l->nproc == 1 && l->nnodes == 1)
                throw ConfigError(fmt::format("train: {} applies to a data-parallel launch only "
                                              "(--nproc N or --nnodes N above 1)",
                                              opt->get_name()),
                                  "drop it for a single-process run");
            if (opts->resume && opts->overwrite)
              throw ConfigError("train: --resume and --overwrite exclude each other");
            auto sets = args->sets;
            if (!device->empty()) sets.push_back("device=" + *device);
            LoadedConfig cfg;
            if (opts->resume) {
              // --config given again must give the run's config (compared key by key).
              cfg = resume_run_config(opts->out_dir, args->configs, sets);
            } else {
              ConfigArgs a = *args;
              a.sets = sets;
              cfg = a.load();
            }
            if (l->nproc > 1 || l->nnodes > 1)
              return launch(*args, *opts, *device, *l, cfg.config);
            TrainResult r = train(cfg, *opts);
            if (dist_env_from_environment().rank != 0) return 0;  // rank 0 reports
            std::cout << fmt::format("finished {} steps in {:.1f}s; run folder: {}\n", r.steps,
                                     r.seconds, opts->out_dir);
            for (const auto& [k, v] : r.valid) std::cout << fmt::format("  valid {} = {:.4f}\n", k, v);
            return 0;
          }};
}

}  // namespace relpos::app
