// relpos sweep: a grid of runs (experiments/sweep.h).
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/commands.h"
#include "core/util/errors.h"
#include "core/util/system.h"
#include "experiments/sweep.h"

namespace relpos::app {

Command add_sweep(CLI::App& app) {
  auto* cmd = app.add_subcommand("sweep", "run a grid of training runs, in parallel");
  struct Args {
    ConfigArgs config;
    std::vector<std::string> grid;
    int64_t jobs = 0;
    int64_t threads = 0;
    std::string out, slurm;
  };
  auto a = std::make_shared<Args>();
  a->config.add_to(cmd);
  cmd->add_option("--grid,-g", a->grid, "an axis: key=v1,v2,... (repeatable; default: sweep.grid)");
  cmd->add_option("--jobs,-j", a->jobs, "runs at once (default: sweep.jobs)")
      ->check(at_least_one());
  cmd->add_option("--threads", a->threads,
                  "threads per run (default, or 0: the config's `threads`; when that is 0, the "
                  "automatic count: the physical cores this process may run on split between "
                  "the --jobs runs, at least 1 each)")
      ->check(integer_in(0));
  cmd->add_option("--out,-o", a->out, "experiment folder; one run folder per point")
      ->required()
      ->check(non_empty("a folder"));
  cmd->add_option("--emit-slurm", a->slurm, "write a SLURM array job to this file instead of running")
      ->check(non_empty("a file name"));
  return {cmd, [a]() {
            SweepOptions o;
            o.configs = a->config.configs;
            if (o.configs.empty()) o.configs.push_back(config_dir() + "/base.yaml");
            o.sets = a->config.sets;
            const Config base = a->config.load().config;
            for (const auto& g : a->grid.empty() ? base.sweep.grid : a->grid) {
              o.grid.push_back(parse_grid_axis(g));
              if (a->grid.empty()) o.grid.back().option = "sweep.grid";
            }
            o.jobs = a->jobs > 0 ? a->jobs : base.sweep.jobs;
            o.threads = a->threads;
            o.out_dir = a->out;
            o.relpos_binary = self_executable();
            if (!a->slurm.empty()) {
              const auto points = expand_grid(o.grid);
              const std::string script = slurm_script(o, points);  // checks every point first
              // SLURM writes the jobs' logs into the experiment folder but does not create it.
              std::error_code ec;
              std::filesystem::create_directories(o.out_dir, ec);
              if (ec) throw RunError(fmt::format("{}: cannot create: {}", o.out_dir, ec.message()));
              std::ofstream f(a->slurm);
              if (!f) throw RunError(fmt::format("{}: cannot write", a->slurm));
              f << script;
              std::cout << fmt::format("wrote {} ({} array elements); submit with: sbatch {}\n",
                                       a->slurm, points.size(), a->slurm);
              return 0;
            }
            keep_sweep_claims(o.out_dir, o.configs, o.sets);
            auto runs = run_sweep(o);
            std::cout << fmt::format("sweep finished: {} runs; summary in {}/summary.md\n",
                                     runs.size(), o.out_dir);
            return 0;
          }};
}

}  // namespace relpos::app
