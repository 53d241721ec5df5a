// relpos train: one training run into a run folder (see core/train/trainer.h).
#include <fmt/format.h>

#include <iostream>

#include "app/commands.h"
#include "core/train/trainer.h"
#include "core/util/errors.h"

namespace relpos::app {

Command add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train one model into a run folder");
  auto args = std::make_shared<ConfigArgs>();
  auto opts = std::make_shared<TrainOptions>();
  auto device = std::make_shared<std::string>();
  args->add_to(cmd);
  cmd->add_option("--out,-o", opts->out_dir, "run folder to write")->required();
  cmd->add_flag("--resume", opts->resume, "continue the run in --out from its checkpoint");
  cmd->add_flag("--overwrite", opts->overwrite, "replace a run already in --out");
  cmd->add_option("--init-from", opts->init_from,
                  "initialise parameters shared by name from this run folder (fine-tuning)");
  cmd->add_option("--device", *device, "cpu, cuda or cuda:N (same as --set device=...)");
  cmd->add_flag("--quiet,-q", opts->quiet, "no progress line");
  return {cmd, [args, opts, device]() {
            if (opts->resume && opts->overwrite)
              throw ConfigError("train: --resume and --overwrite exclude each other");
            if (opts->resume && !args->configs.empty())
              throw ConfigError("train: --resume uses the run's own config.yaml; drop --config",
                                "--set still applies, e.g. --set train.steps=2000");
            auto sets = args->sets;
            if (!device->empty()) sets.push_back("device=" + *device);
            LoadedConfig cfg;
            if (opts->resume) {
              cfg = load_run_config(opts->out_dir, sets);
            } else {
              ConfigArgs a = *args;
              a.sets = sets;
              cfg = a.load();
            }
            TrainResult r = train(cfg, *opts);
            std::cout << fmt::format("finished {} steps in {:.1f}s; run folder: {}\n", r.steps,
                                     r.seconds, opts->out_dir);
            for (const auto& [k, v] : r.valid) std::cout << fmt::format("  valid {} = {:.4f}\n", k, v);
            return 0;
          }};
}

}  // namespace relpos::app
