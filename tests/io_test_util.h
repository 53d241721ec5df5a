// Helpers for the run-file and checkpoint tests: scratch folders, byte-level file surgery, and
// running a function in a child process that is then killed with SIGKILL.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace relpos::test {

// A fresh folder under the system temp folder, removed with its contents at scope exit.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("relpos_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Forks a child that runs `body(notify)`; `notify()` (called by `body`, or after `body` returns)
// tells the parent the child got that far, and the child then waits to be killed. The parent
// waits for the notification, runs `while_alive`, kills the child with SIGKILL and reaps it.
// Returns true when the child notified and died by SIGKILL.
inline bool run_and_kill(const std::function<void(const std::function<void()>&)>& body,
                         const std::function<void()>& while_alive = {}) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    ::close(fds[0]);
    bool notified = false;
    auto notify = [&] {
      const char done = 1;
      if (!notified && ::write(fds[1], &done, 1) != 1) ::_exit(4);
      notified = true;
    };
    try {
      body(notify);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "run_and_kill: the child failed: %s\n", e.what());
      ::_exit(3);
    } catch (...) {
      ::_exit(3);
    }
    notify();
    while (true) ::pause();  // killed by the parent
  }
  ::close(fds[1]);
  char done = 0;
  const bool reported = ::read(fds[0], &done, 1) == 1;
  ::close(fds[0]);
  std::exception_ptr failure;  // a failed REQUIRE must not leave the child running
  if (reported && while_alive) {
    try {
      while_alive();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (failure) std::rethrow_exception(failure);
  const bool killed = reported && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (!killed)
    std::fprintf(stderr, "run_and_kill: the child %s %d before it was killed (reported: %d)\n",
                 WIFSIGNALED(status) ? "died of signal" : "exited with status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), reported ? 1 : 0);
  return killed;
}

}  // namespace relpos::test
