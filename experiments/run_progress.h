// One line on a run in progress, for the progress display of sweeps and experiments.
#pragma once

#include <string>

namespace relpos {

// From the last line of the run's metrics.jsonl and its config:
// "step 480/600 (80%) loss 2.79 5.4k tok/s". Empty when it has logged nothing yet (or the line
// is being written right now).
std::string run_progress(const std::string& dir);

}  // namespace relpos
