// `relpos report DIR`: report.md and report.html (figures inlined as base64 PNG) putting
// together the tables and figures that `relpos analyze DIR` wrote, with the commands, commits
// and machine that produced them. Reads DIR/tables/*.md, DIR/figures/index.tsv, the same in each
// run folder, and DIR/commands.txt when present; report.html ends with the interactive explorer
// (explorer.h), which reads the snapshots of the first run of each variant from its run.h5.
#pragma once

#include <string>
#include <vector>

#include "analysis/run_analysis.h"

namespace relpos::analysis {

struct ReportInputs {
  std::string dir;            // the experiment (or run) folder
  std::vector<RunInfo> runs;  // provenance of each run (attributes of its run.h5)
  bool experiment = false;    // dir holds run folders (else dir is one run)
};

// Returns the Markdown written to dir/report.md; dir/report.html is written beside it.
std::string write_report(const ReportInputs& in);

// The HTML page for a Markdown text in the subset write_report produces (headings,
// paragraphs, lists, code blocks, tables, images); images relative to base_dir are inlined.
std::string markdown_to_html(const std::string& markdown, const std::string& base_dir,
                             const std::string& title);

std::string base64(const std::string& bytes);

}  // namespace relpos::analysis
