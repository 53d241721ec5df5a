// The top-level report of a multi-stage experiment: Markdown with tables, figures copied from
// the stages, and links to each stage's own report; an HTML page beside it (figures inlined).
#pragma once

#include <string>
#include <vector>

#include "analysis/tables.h"
#include "experiments/experiment_context.h"

namespace relpos {

struct ReportSection {
  std::string heading;
  std::string text;                      // Markdown paragraph(s)
  std::vector<analysis::Table> tables;   // written to tables/<stem>.{md,csv,tex}
  std::vector<std::string> table_stems;
  std::vector<std::pair<std::string, std::string>> figures;  // (PNG path, caption); copied to figures/
};

// tisa2021's table(s) of positional parameter counts for every variant: at the experiment's
// model size and at ALBERT-base size (the experiment's config with ALBERT-base dimensions), or
// one table when the two sizes are the same (the paper scale).
ReportSection tisa2021_parameter_section(const Config& own, const std::string& config_file);

// Writes DIR/report.md and DIR/report.html; returns the Markdown path.
std::string write_experiment_report(const ExperimentContext& ctx, const std::string& title,
                                    const std::string& intro,
                                    const std::vector<ReportSection>& sections);

// A corpus value (data.corpus and the like) in words: the built-in sets by name, paths quoted.
std::string corpus_in_words(const std::string& corpus);
// What a stage trains on and is validated on, from its config file with the stage's --set
// overrides: "the State of the Union corpus", "a held-out 5% of ...", "'dev-v1.1.json'".
std::string training_data(const ExperimentContext& ctx, const std::string& stage,
                          const std::string& config_file);
std::string validation_data(const ExperimentContext& ctx, const std::string& stage,
                            const std::string& config_file);

}  // namespace relpos
