// What `relpos analyze` adds to a run's live curves (docs/training.md, "Live curves"): a
// TensorBoard event file in DIR/analysis/ (run_analysis_events_dir), which TensorBoard lists as a
// run of its own beside the trainer's (a second file in the run folder would stop TensorBoard
// from following the training file while the run trains).
//
//   invariance/<quantity>   each snapshot's headline invariance (snapshot.h's summarize():
//                           attention, attention_heads, scores:<variant>, gram:<variant>), 0–1,
//                           at the snapshot's step
//   figures/<name>          each figure the analysis drew (PNG), at the step of the snapshot the
//                           figures show (--step; the last by default)
//
// Each analysis replaces the folder's event file; it starts with a SessionLog START at step 0, so
// that a TensorBoard that read an earlier analysis drops that one's values.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/run_analysis.h"

namespace relpos::analysis {

// Writes the event file for `r` into run_analysis_events_dir(dir); returns its path.
std::string write_analysis_events(const RunResult& r, const std::string& dir, int64_t figure_step);

}  // namespace relpos::analysis
