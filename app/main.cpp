// relpos — one executable, one subcommand per task (`relpos --help`).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "app/commands.h"
#include "core/config/config.h"
#include "core/position/position_registry.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/signals.h"

namespace {

int run_command(int argc, char** argv) {
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
      app::add_import(app),
      app::add_export(app),
      app::add_watch(app),
      app::add_tokenizer(app),
  };
  // `relpos bogus`: CLI11 would say only "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& c : commands) names.push_back(c.cmd->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::cerr << "error: unknown command '" << argv[1] << "' (known: " << join_names(names)
                << ")\n"
                << "hint: relpos --help describes each command\n";
      return 2;
    }
  }
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

}  // namespace

int main(int argc, char** argv) {
  const int code = run_command(argc, argv);
  // Output that could not be written (a full disk, /dev/full) is lost: exit 0 would say that
  // the command did what it printed.
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;  // the reason, when the failure was in these last writes
  if (!std::cout || !flushed || std::ferror(stdout)) {
    std::cerr << "error: could not write to standard output"
              << (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) << "\n"
              << "hint: what it printed is incomplete (a full disk, or a reader that stopped "
                 "reading)\n";
    return code != 0 ? code : 2;
  }
  return code;
}
