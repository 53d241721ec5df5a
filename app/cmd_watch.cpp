// relpos watch RUN_OR_FOLDER: follows one run, or every run below a folder (a sweep), in the
// terminal until they have ended (analysis/watch.h). docs/training.md, "Watching runs".
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "analysis/watch.h"
#include "app/commands.h"

namespace relpos::app {

Command add_watch(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "watch",
      "follow a run or every run of a sweep folder: step, loss, tokens/s, ETA and a "
      "loss curve per run, until they end");
  auto path = std::make_shared<std::string>();
  auto o = std::make_shared<analysis::WatchOptions>();
  cmd->add_option("RUN_OR_FOLDER", *path,
                  "a run folder (relpos train --out) or a folder with run folders below it "
                  "(relpos sweep --out, results/<experiment>)")
      ->required();
  cmd->add_option("--interval", o->interval_s, "seconds between looks (default 2)")
      ->check(number_at_least(0.1));
  cmd->add_flag("--once", o->once, "print the runs' state once and exit");
  cmd->add_option("--width", o->curve_width, "columns of each run's loss curve (default 24)")
      ->check(integer_in(1, 200));
  cmd->footer(
      "Ends when every run has finished (result.json) or stopped (no live lock, no change since "
      "the last look) and no sweep holds the folder. On a terminal the view is redrawn in place; "
      "otherwise each run's line is printed when it changes, without escape codes.\n");
  return {cmd, [path, o]() {
            o->tty = ::isatty(::fileno(stdout)) != 0;
            analysis::watch_runs(*path, *o, std::cout);
            return 0;
          }};
}

}  // namespace relpos::app
