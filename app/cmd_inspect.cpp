// relpos inspect FILE: the tree of a run file with element types, shapes, axis names and
// attributes (docs/hdf5-schema.md; refuses files with a newer schema version), or what a
// checkpoint holds (train state, optimizer groups, every tensor's type and shape).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "core/util/text_util.h"  // file_kind
#include "core/io/checkpoint.h"
#include "core/io/run_file.h"
#include "core/util/errors.h"

namespace relpos::app {

Command add_inspect(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("inspect", "print what a run.h5 or a checkpoint.pt holds");
  auto file = std::make_shared<std::string>();
  cmd->add_option("file", *file, "an HDF5 run file (DIR/run.h5) or a checkpoint (DIR/checkpoint.pt)")
      ->required();
  return {cmd, [file]() {
            if (std::filesystem::is_directory(*file))
              throw ConfigError(fmt::format("inspect: {} is a folder", *file),
                                "give a file in it: DIR/run.h5 or DIR/checkpoint.pt");
            // Opening a FIFO blocks until a writer comes, and a device never ends: refused
            // before anything opens it (a missing file is named by the reader).
            std::error_code ec;
            const auto type = std::filesystem::status(*file, ec).type();
            if (type != std::filesystem::file_type::regular &&
                type != std::filesystem::file_type::not_found)
              throw ConfigError(fmt::format("inspect: {}: not a regular file ({}; expected a "
                                            "run.h5 or checkpoint.pt file)",
                                            *file, file_kind(*file)),
                                "give a file: DIR/run.h5 or DIR/checkpoint.pt");
            // By content first (a renamed file is still recognised); a .pt that is not a zip
            // archive is a damaged checkpoint, and is reported as one rather than as HDF5.
            const bool checkpoint =
                looks_like_checkpoint(*file) ||
                std::filesystem::path(*file).extension() == ".pt";
            std::cout << (checkpoint ? describe_checkpoint(*file) : describe_run_file(*file));
            return 0;
          }};
}

}  // namespace relpos::app
