// relpos report DIR: report.md and report.html from what `relpos analyze DIR` wrote (analyses
// first when DIR has no tables yet, or a run changed after its tables were written).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "analysis/claims_folder.h"
#include "analysis/report.h"
#include "analysis/run_source.h"
#include "app/commands.h"
#include "core/position/position_registry.h"
#include "core/io/run_paths.h"

namespace relpos::app {

Command add_report(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("report", "report.md and report.html of an experiment or run folder");
  auto dir = std::make_shared<std::string>();
  auto reanalyze = std::make_shared<bool>(false);
  auto claims = std::make_shared<std::string>();
  cmd->add_option("DIR", *dir, "experiment or run folder")->required();
  cmd->add_flag("--analyze", *reanalyze, "run `relpos analyze DIR` first even when its tables are up to date (they are analysed "
                 "again anyway when missing or older than a run's run.h5 or result.json)");
  cmd->add_option("--claims", *claims,
                  "a YAML file whose `claims:` block is judged on the folder's runs (as `relpos "
                  "analyze --claims`; the folder is analysed again)");
  return {cmd, [dir, reanalyze, claims]() {
            namespace fs = std::filesystem;
            analysis::ReportInputs in;
            in.dir = *dir;
            std::vector<std::string> dirs = analysis::run_dirs_of(*dir);
            in.experiment = !is_run_folder(*dir);
            const fs::path tables = fs::path(*dir) / "tables";
            if (!claims->empty()) analysis::adopt_claims_file(*dir, *claims);
            std::string why = *reanalyze ? "asked for" : !claims->empty() ? "claims to judge" : "";
            if (why.empty() && !fs::exists(tables)) why = "no tables yet";
            if (why.empty()) why = analysis::newer_than_tables(dirs, tables.string());
            if (!why.empty()) {
              std::cout << fmt::format("analysing {} first ({})\n", *dir, why);
              analysis::AnalyzeOptions o;
              o.encoder_notes = encoder_notes();
              analysis::analyze_folder(*dir, o, {}, nullptr);
              if (in.experiment) dirs = analysis::find_run_dirs(*dir);
            }
            for (const auto& d : dirs) in.runs.push_back(analysis::RunFileSource(d).info());
            std::vector<const analysis::RunInfo*> infos;
            for (const auto& r : in.runs) infos.push_back(&r);
            analysis::check_one_task(infos, *dir);
            analysis::write_report(in);
            std::cout << fmt::format("wrote {0}/report.md and {0}/report.html\n", *dir);
            return 0;
          }};
}

}  // namespace relpos::app
