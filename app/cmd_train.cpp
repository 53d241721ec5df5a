// relpos train: one training run into a run folder (see core/train/trainer.h); with --nproc N,
// N data-parallel ranks on this machine (core/dist/launch.h, docs/scaling.md).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "core/dist/distributed.h"
#include "core/dist/train_launch.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"

namespace relpos::app {

namespace {

// The run folder from --out and --resume [DIR]: either names it; both must name the same one.
void resolve_run_folder(TrainCommand& o, const std::string& resume_dir) {
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

// The launch options mean something only to a data-parallel launch: never ignored.
void check_launch_options(const DataParallelOptions& l, const CLI::Option* node_rank,
                          const std::vector<const CLI::Option*>& launch_only) {
  if (node_rank->count() > 0 && l.node_rank >= l.nnodes)
    throw ConfigError(fmt::format("train: --node-rank {}: expected 0..{} (--nnodes is {})",
                                  l.node_rank, l.nnodes - 1, l.nnodes),
                      "--node-rank numbers the nodes of --nnodes N, each running --nproc ranks "
                      "(docs/scaling.md)");
  for (const auto* opt : launch_only)
    if (opt->count() > 0 && !l.distributed())
      throw ConfigError(fmt::format("train: {} applies to a data-parallel launch only (--nproc N "
                                    "or --nnodes N above 1)",
                                    opt->get_name()),
                        "drop it for a single-process run");
}

// The run's config: the files and --set (and --device), or with --resume the run's own, which a
// --config given again must equal key by key.
LoadedConfig train_config(const TrainCommand& c) {
  auto sets = c.sets;
  if (!c.device.empty()) sets.push_back("device=" + c.device);
  if (c.resume) return resume_run_config(c.out_dir, c.configs, sets);
  ConfigArgs a;
  a.configs = c.configs;
  a.sets = sets;
  return a.load();
}

int train_here(const TrainCommand& c, const LoadedConfig& cfg) {
  TrainOptions o;
  o.out_dir = c.out_dir;
  o.resume = c.resume;
  o.overwrite = c.overwrite;
  o.init_from = c.init_from;
  o.quiet = c.quiet;
  TrainResult r = train(cfg, o);
  if (dist_env_from_environment().rank != 0) return 0;  // rank 0 reports
  std::cout << fmt::format("finished {} steps in {:.1f}s; run folder: {}\n", r.steps, r.seconds,
                           o.out_dir);
  for (const auto& [k, v] : r.valid) std::cout << fmt::format("  valid {} = {:.4f}\n", k, v);
  return 0;
}

}  // namespace

Command add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train one model into a run folder");
  auto args = std::make_shared<ConfigArgs>();
  auto c = std::make_shared<TrainCommand>();
  auto l = std::make_shared<DataParallelOptions>();
  auto resume_dir = std::make_shared<std::string>();
  args->add_to(cmd);
  cmd->add_option("--out,-o", c->out_dir, "run folder to write (or to resume)");
  // `--resume DIR` and `--resume --out DIR` are the same; an empty value means "not given".
  auto* resume = cmd->add_option("--resume", *resume_dir,
                                 "continue a run from its checkpoint: --resume DIR, or --resume "
                                 "with --out DIR")
                     ->expected(0, 1);
  cmd->add_flag("--overwrite", c->overwrite, "replace a run already in --out");
  cmd->add_option("--init-from", c->init_from,
                  "initialise parameters shared by name from this run folder (fine-tuning)");
  cmd->add_option("--device", c->device, "cpu, cuda or cuda:N (same as --set device=...)")
      ->check(non_empty("cpu, cuda or cuda:N"));  // "" used to mean "not given"
  cmd->add_flag("--quiet,-q", c->quiet, "no progress line");
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
  return {cmd, [args, c, l, node_rank, master_addr, master_port, max_restarts, resume,
                resume_dir]() {
            c->configs = args->configs;
            c->sets = args->sets;
            c->resume = resume->count() > 0;
            resolve_run_folder(*c, *resume_dir);
            resume_after_launcher_restart(*c);
            check_launch_options(*l, node_rank, {master_addr, master_port, max_restarts});
            if (c->resume && c->overwrite)
              throw ConfigError("train: --resume and --overwrite exclude each other");
            const LoadedConfig cfg = train_config(*c);
            if (l->distributed()) return launch_training(*c, *l, cfg.config.train.batch_size);
            return train_here(*c, cfg);
          }};
}

}  // namespace relpos::app
