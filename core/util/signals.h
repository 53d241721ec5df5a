// SIGINT/SIGTERM handling for long-running commands (`relpos train`, `sweep`, `reproduce`):
// the first signal sets a flag that the work loop checks at safe points (the trainer between
// steps: it saves a checkpoint, closes run.h5 and throws Interrupted). While stopping, a second
// SIGINT (Ctrl-C twice) ends the process at once with the default action; a repeated SIGTERM is
// ignored (process managers often send it to the process and to its group; SIGKILL insists).
// A signal that was ignored when the process started (SIG_IGN inherited, as `nohup` or a sweep
// parent arranges for SIGINT) stays ignored.
//
// Usage in a command that can be interrupted:
//   install_interrupt_handlers();             // once, before the work starts
//   ... if (interrupt_requested()) { save; throw Interrupted(...); } ...
// main() turns Interrupted into "error: ..." / "hint: ..." and the exit code 128 + signal
// (130 for SIGINT, 143 for SIGTERM), the shell's convention for a process ended by a signal.
#pragma once

#include <string>

#include "core/util/errors.h"

namespace relpos {

// A run stopped cleanly because of SIGINT/SIGTERM; what() says what was saved, hint() how to
// continue.
class Interrupted : public RunError {
 public:
  Interrupted(int signal, const std::string& what, std::string hint = {})
      : RunError(what, std::move(hint)), signal_(signal) {}
  int signal() const { return signal_; }
  int exit_code() const { return 128 + signal_; }

 private:
  int signal_;
};

void install_interrupt_handlers();  // idempotent
bool interrupt_requested();
int interrupt_signal();      // the signal received, 0 if none
std::string interrupt_signal_name();  // "SIGTERM", "SIGINT", or "signal N"
void clear_interrupt();      // for tests

// Sleeps up to `seconds`, returning early when an interrupt arrives; true when interrupted.
bool sleep_unless_interrupted(double seconds);

}  // namespace relpos
