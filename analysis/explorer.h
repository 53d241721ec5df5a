// The interactive explorer of report.html: the reader chooses a run, a map (attention, a
// variant's position-only scores, P·Pᵀ of an absolute table), a snapshot, a layer and a head;
// the page draws the map and shows the value under the cursor, and overlays the relative-weight
// curves of several runs. Self-contained: the numbers are embedded in the page as JSON (float32,
// little-endian, base64) and the code is analysis/explorer.js, compiled into the binary, so the
// page needs no network and an installed relpos needs no source tree.
//
// Size: one run per variant (the first, as the report's figures), and a budget of embedded
// values shared by those runs. A run over its share is shown with every s-th query/key
// (s a power of 2; entries are picked, not averaged, so each shown value is run.h5's) and, where
// that is not enough, at a few of its snapshots (first and last among them); the page says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/run_analysis.h"
#include "analysis/variant_palette.h"

namespace relpos::analysis {

struct ExplorerBudget {
  int64_t max_values = 500000;  // floats embedded over all runs (~2.7 MB as base64)
  int64_t max_side = 64;        // a map is shown with at most this many rows and columns
  int64_t min_snapshots = 3;    // fewer snapshots than a run has: never fewer than this
  int64_t radius = 50;          // relative-weight curves over r in [−radius, radius]
};

// What the explorer embeds of one run.
struct ExplorerPlan {
  int64_t stride = 1;                 // every stride-th query/key (position) shown
  std::vector<int64_t> steps;         // the snapshots embedded (a subset of the run's)
  int64_t values_per_snapshot = 0;    // floats of the maps at that stride
};

// The plan for a run whose snapshots hold `sample` (any one of them: shapes are the same) and
// `snapshot_steps`, given `share` of the budget's values.
ExplorerPlan plan_explorer(const SnapshotData& sample, const std::vector<int64_t>& snapshot_steps,
                           const SnapshotOptions& o, int64_t share, const ExplorerBudget& b);

// The explorer's data: a JSON object (runs, their maps and curves, a note on what was left out).
std::string explorer_json(const std::vector<const RunSource*>& runs, const VariantPalette& palette,
                          const ExplorerBudget& b = {});

// The explorer as an HTML fragment (heading, controls, the data, the code) for the end of
// report.html; a one-line note instead when no run has a snapshot.
std::string explorer_html(const std::vector<const RunSource*>& runs, const VariantPalette& palette,
                          const ExplorerBudget& b = {});

// analysis/explorer.js, as compiled in.
const char* explorer_script();

}  // namespace relpos::analysis
