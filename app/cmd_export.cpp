// relpos export: a BERT-shaped run as a Hugging Face BertForMaskedLM folder
// (core/hf/hf_export.h, docs/pretrained.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "app/commands.h"
#include "core/hf/hf_export.h"

namespace relpos::app {

Command add_export(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "export", "write a BERT-shaped run as a Hugging Face folder (BertForMaskedLM)");
  auto o = std::make_shared<HfExportOptions>();
  auto format = std::make_shared<std::string>();
  cmd->add_option("run", o->run, "the run folder")->required()->check(non_empty("a run folder"));
  cmd->add_option("--format", *format, "output format: hf (Hugging Face)")
      ->required()
      ->check(CLI::IsMember({"hf"}));
  cmd->add_option("--out,-o", o->out, "the folder to write")->required()->check(non_empty("a folder"));
  cmd->add_flag("--overwrite", o->overwrite, "replace a Hugging Face folder already at --out");
  cmd->footer("Exportable: " + hf_exportable_variants() + ".");
  // The lambda owns `format` too: CLI11 writes the option into it while parsing.
  return {cmd, [o, format]() {
            const HfExportReport r = export_hf_model(*o);
            std::cout << fmt::format("exported {} as BertForMaskedLM (position_embedding_type {}): "
                                     "{}\n",
                                     o->run, r.position_embedding_type, fmt::join(r.files, ", "));
            for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
            std::cout << fmt::format("folder: {}\n", o->out);
            return 0;
          }};
}

}  // namespace relpos::app
