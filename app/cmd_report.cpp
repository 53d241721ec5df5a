// relpos report DIR: report.md and report.html from what `relpos analyze DIR` wrote (analyses
// first when DIR has no tables yet).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "analysis/report.h"
#include "analysis/run_source.h"
#include "app/commands.h"
#include "core/util/errors.h"

namespace relpos::app {

Command add_report(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("report", "report.md and report.html of an experiment or run folder");
  auto dir = std::make_shared<std::string>();
  auto reanalyze = std::make_shared<bool>(false);
  cmd->add_option("DIR", *dir, "experiment or run folder")->required();
  cmd->add_flag("--analyze", *reanalyze, "run `relpos analyze DIR` first even when it has tables");
  return {cmd, [dir, reanalyze]() {
            namespace fs = std::filesystem;
            analysis::ReportInputs in;
            in.dir = *dir;
            in.experiment = !analysis::is_run_dir(*dir);
            if (*reanalyze || !fs::exists(fs::path(*dir) / "tables")) {
              std::cout << "analysing " << *dir << " first\n";
              analysis::analyze_folder(*dir, {}, {}, nullptr);
            }
            const std::vector<std::string> dirs =
                in.experiment ? analysis::find_run_dirs(*dir) : std::vector<std::string>{*dir};
            if (dirs.empty())
              throw ConfigError(fmt::format("{} holds no run.h5 and no run folders", *dir));
            for (const auto& d : dirs) in.runs.push_back(analysis::RunFileSource(d).info());
            analysis::write_report(in);
            std::cout << fmt::format("wrote {0}/report.md and {0}/report.html\n", *dir);
            return 0;
          }};
}

}  // namespace relpos::app
