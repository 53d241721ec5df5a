// SIGINT/SIGTERM handling for long runs: the first signal sets a flag that the trainer checks
// between steps (it then saves a checkpoint and stops cleanly); a second one ends the process
// at once with the default action.
#pragma once

namespace relpos {

void install_interrupt_handlers();
bool interrupt_requested();
int interrupt_signal();      // the signal received, 0 if none
void clear_interrupt();      // for tests

}  // namespace relpos
