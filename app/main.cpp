// relpos — one executable, one subcommand per task (`relpos --help`).
#include <fmt/format.h>

#include <iostream>

#include "app/commands.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/signals.h"

namespace relpos::app {


void ConfigArgs::add_to(CLI::App* cmd, const std::string& default_files) {
  cmd->add_option("--config,-c", configs,
                  "YAML config(s), merged in order (default: " + default_files + ")");
  cmd->add_option("--set,-s", sets, "override a key: --set model.layers=4 (repeatable)");
}

LoadedConfig ConfigArgs::load() const {
  std::vector<std::string> files = configs;
  if (files.empty()) files.push_back(config_dir() + "/base.yaml");
  return load_config(files, sets);
}

}  // namespace relpos::app

int main(int argc, char** argv) {
  using namespace relpos;
  CLI::App app{"relpos: train and analyse transformers under many position encodings"};
  app.require_subcommand(1);
  const std::vector<app::Command> commands = {
      app::add_list(app),
      app::add_config(app),
      app::add_train(app),
      app::add_eval(app),
      app::add_sweep(app),
      app::add_reproduce(app),
      app::add_inspect(app),
      app::add_analyze(app),
      app::add_report(app),
      app::add_bench(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // Like every other error: one error: line, a hint, exit status 2.
    std::string name;
    for (const auto& c : commands)
      if (c.cmd->parsed()) name = " " + c.cmd->get_name();
    std::cerr << "error: " << e.what() << "\n"
              << "hint: relpos" << name << " --help lists the options and their values\n";
    return 2;
  }
  try {
    for (const auto& c : commands)
      if (c.cmd->parsed()) return c.run();
    return 1;
  } catch (const Interrupted& e) {  // SIGINT/SIGTERM honoured: 128 + signal, as a shell reports
    std::cerr << "error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "hint: " << e.hint() << "\n";
    return e.exit_code();
  } catch (const PeerLost& e) {  // a data-parallel peer failed: the launcher reads the code
    std::cerr << "error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "hint: " << e.hint() << "\n";
    return kPeerLostExitCode;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "hint: " << e.hint() << "\n";
    return 2;
  } catch (const c10::Error& e) {
    std::cerr << "error: " << e.what_without_backtrace() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  }
}
