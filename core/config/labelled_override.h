// Overrides given by options other than --set (`sweep --grid`, `bench --variants`), named in
// their errors as the user wrote them rather than as a --set the user never typed.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/config/loader.h"

namespace relpos {

// {"position.type=bogus", "command line (--grid position.type=none,bogus)"} gives
// "command line (--grid position.type=none,bogus): position.type: unknown position variant ...".
struct LabelledOverride {
  std::string assignment;  // dotted.key=value
  std::string origin;      // where it comes from, as messages name it
};

// apply_override (loader.h) with the origin that messages name.
void apply_override(LayeredYaml& layers, const std::string& assignment, const std::string& origin);

// load_config (config.h) with, after `overrides`, the labelled ones.
LoadedConfig load_config(const std::vector<std::string>& files,
                         const std::vector<std::string>& overrides,
                         const std::vector<LabelledOverride>& labelled);

}  // namespace relpos
