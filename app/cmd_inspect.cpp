// relpos inspect FILE.h5: the tree of a run file with element types, shapes, axis names and
// attributes (docs/hdf5-schema.md). Refuses files with a newer schema version.
#include <iostream>

#include "app/commands.h"
#include "core/io/run_file.h"

namespace relpos::app {

Command add_inspect(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("inspect", "print the groups, datasets and attributes of a run.h5");
  auto file = std::make_shared<std::string>();
  cmd->add_option("file", *file, "an HDF5 run file (DIR/run.h5)")->required();
  return {cmd, [file]() {
            std::cout << describe_run_file(*file);
            return 0;
          }};
}

}  // namespace relpos::app
