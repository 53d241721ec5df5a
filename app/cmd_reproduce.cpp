// relpos reproduce NAME: a named experiment end to end (experiments/experiment_context.h).
#include <fmt/format.h>

#include <iostream>

#include "app/commands.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/system.h"
#include "experiments/experiment_context.h"

namespace relpos::app {

Command add_reproduce(CLI::App& app) {
  auto* cmd = app.add_subcommand("reproduce", "run a named experiment: sweeps, evaluation, analysis, report");
  auto o = std::make_shared<ReproduceOptions>();
  auto list = std::make_shared<bool>(false);
  std::string names;
  for (const auto& e : experiment_list()) names += (names.empty() ? "" : ", ") + e.name;
  cmd->add_option("name", o->name, "experiment: " + names);
  cmd->add_option("--scale", o->scale, "mini (2-core CPU, built-in data) or paper (GPU, your corpora)");
  cmd->add_option("--out,-o", o->out_dir, "experiment folder (default results/<name> at --scale mini, results/<name>-<scale> otherwise)")
      ->check(non_empty("a folder"));
  cmd->add_option("--jobs,-j", o->jobs, "runs at once (default: the experiment config's sweep.jobs)")
      ->check(at_least_one());
  cmd->add_option("--set,-s", o->sets,
                  "override a key in every run (--set device=cuda) or in one stage's runs "
                  "(--set squad:data.corpus=train-v1.1.json)");
  cmd->add_flag("--list", *list, "list the experiments and exit");
  cmd->add_flag("--quiet,-q", o->quiet, "less output");
  auto no_figures = std::make_shared<bool>(false);
  cmd->add_flag("--no-figures", *no_figures,
                "tables, claims and reports without figures (no gnuplot needed)");
  return {cmd, [o, list, no_figures]() {
            if (*list) {
              for (const auto& e : experiment_list())
                std::cout << fmt::format("  {:<14} {}\n", e.name, e.summary);
              return 0;
            }
            if (o->name.empty()) {
              std::vector<std::string> known;
              for (const auto& e : experiment_list()) known.push_back(e.name);
              throw ConfigError(
                  fmt::format("reproduce: no experiment named (expected one of: {})", join_names(known)),
                  "relpos reproduce --list describes each; e.g. relpos reproduce " + known.front());
            }
            o->figures = !*no_figures;
            o->relpos_binary = self_executable();
            o->command_line = fmt::format("relpos reproduce {} --scale {}", o->name, o->scale);
            for (const auto& s : o->sets) o->command_line += " --set " + repo_relative_word(s);
            if (!o->figures) o->command_line += " --no-figures";
            const std::string report = reproduce(*o);
            std::cout << "report: " << report << "\n";
            return 0;
          }};
}

}  // namespace relpos::app
