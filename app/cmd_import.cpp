// relpos import: a Hugging Face model folder as a relpos run folder (core/hf/hf_import.h,
// docs/pretrained.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "app/commands.h"
#include "core/hf/hf_import.h"

namespace relpos::app {

Command add_import(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "import", "turn a Hugging Face model folder (BERT, ALBERT, RoBERTa, GPT-2) into a run folder");
  auto o = std::make_shared<ImportOptions>();
  cmd->add_option("dir", o->source,
                  "the model folder: config.json, model.safetensors (or pytorch_model.bin), and "
                  "vocab.txt / spiece.model / vocab.json")
      ->required()
      ->check(non_empty("a folder"));
  cmd->add_option("--out,-o", o->out, "run folder to write")->required()->check(non_empty("a folder"));
  cmd->add_option("--set,-s", o->sets,
                  "override a config key of the run (data.*, task.*, snapshots.*, ...; model.* and "
                  "position.* come from config.json), e.g. --set data.corpus=train.json");
  cmd->add_flag("--init-missing-head", o->init_missing_head,
                "a checkpoint of the bare model (no MLM head): start the head freshly initialised");
  cmd->add_flag("--overwrite", o->overwrite, "replace a run folder already at --out");
  return {cmd, [o]() {
            const ImportReport r = import_hf_model(*o);
            std::cout << fmt::format("imported {} from {}: {} parameters, position.type {}\n",
                                     r.architecture, o->source, r.parameters, r.position_types);
            std::cout << fmt::format("weights: {} (sha256 {})\n", r.weights_file, r.weights_sha256);
            if (r.unused.empty())
              std::cout << "every tensor of the checkpoint is used\n";
            else
              std::cout << fmt::format("not used ({} tensor{}, listed in result.json): {}\n",
                                       r.unused.size(), r.unused.size() == 1 ? "" : "s",
                                       fmt::join(r.unused, ", "));
            if (!r.initialised.empty())
              std::cout << fmt::format("freshly initialised: {}\n", fmt::join(r.initialised, ", "));
            for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
            std::cout << fmt::format("run folder: {}\n", o->out);
            return 0;
          }};
}

}  // namespace relpos::app
