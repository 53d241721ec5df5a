// relpos list: every registered variant with its summary and positional parameter count for
// the given config (model width, heads, layers and each variant's own parameters).
#include <fmt/format.h>

#include <iostream>

#include "app/commands.h"
#include "core/position/position_encoding.h"

namespace relpos::app {

Command add_list(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "list position variants and their parameter counts");
  auto args = std::make_shared<ConfigArgs>();
  args->add_to(cmd);
  return {cmd, [args]() {
    LoadedConfig loaded = args->load();
    const Config& c = loaded.config;
    const ModelDims dims = model_dims(c.model);
    const Registry& reg = Registry::get();
    std::cout << fmt::format(
        "position variants for L={} D={} H={} E={} ({}; positional parameters in the model):\n",
        c.model.layers, c.model.width, c.model.heads, c.model.embed_dim(),
        c.model.share_layers ? "layers shared" : "layers not shared");
    for (const auto& name : reg.names()) {
      const VariantInfo& info = reg.at(name);
      auto enc = info.make(dims, c.position.params_of(name), c.position);
      std::cout << fmt::format("  {:<15} {:>9}  {}{}\n", name, enc->parameter_count(),
                               info.summary, info.provisional ? "  [provisional]" : "");
    }
    std::cout << "[provisional]: reconstructed from secondary descriptions of the paper; "
                 "huang_m4 is verified against the authors' code.\n";
    return 0;
  }};
}

}  // namespace relpos::app
