// relpos config: print the resolved config (files merged, --set applied, validated).
#include <iostream>

#include "app/commands.h"

namespace relpos::app {

Command add_config(CLI::App& app) {
  auto* cmd = app.add_subcommand("config", "print the resolved config and exit");
  auto args = std::make_shared<ConfigArgs>();
  args->add_to(cmd);
  return {cmd, [args]() {
    std::cout << to_yaml(args->load().config);
    return 0;
  }};
}

}  // namespace relpos::app
