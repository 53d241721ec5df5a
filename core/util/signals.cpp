#include "core/util/signals.h"

#include <fmt/format.h>

#include <csignal>
#include <ctime>

namespace relpos {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  if (g_signal != 0) {
    // Already stopping. A second Ctrl-C means "now"; a repeated SIGTERM is ignored, because
    // process managers often deliver it twice (to the process and to its group) and SIGKILL is
    // the way to insist.
    if (sig == SIGINT) {
      std::signal(sig, SIG_DFL);
      std::raise(sig);
    }
    return;
  }
  g_signal = sig;
}

void install(int sig) {
  struct sigaction old {};
  sigaction(sig, nullptr, &old);
  if (old.sa_handler == SIG_IGN) return;  // ignored by whoever started us: keep it so
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // Restart interrupted system calls: a signal must never turn a file write into an error.
  // Loops that wait check the flag at least every few milliseconds instead.
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_interrupt_handlers() {
  install(SIGINT);
  install(SIGTERM);
}

bool interrupt_requested() { return g_signal != 0; }
int interrupt_signal() { return g_signal; }
std::string interrupt_signal_name() {
  switch (g_signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return fmt::format("signal {}", static_cast<int>(g_signal));
  }
}
void clear_interrupt() { g_signal = 0; }

bool sleep_unless_interrupted(double seconds) {
  const double slice = 0.01;
  for (double left = seconds; left > 0; left -= slice) {
    if (interrupt_requested()) return true;
    const double s = left < slice ? left : slice;
    timespec ts{0, static_cast<long>(s * 1e9)};
    nanosleep(&ts, nullptr);
  }
  return interrupt_requested();
}

}  // namespace relpos
