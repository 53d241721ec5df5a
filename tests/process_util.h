// Helpers for tests that run the real `relpos` executable (RELPOS_BINARY) as a child process:
// start it with its output captured, wait for it to reach a point (lines in metrics.jsonl),
// send it a signal, reap it with a time limit; and a small tmpfs mounted for a test. Every wait
// here ends at its event (an exit, a line, a file) and gives up only after kPatienceS; every
// child is noted in the ChildLog (tests/child_log.h), whose output a failing test case prints.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/dist/distributed.h"
#include "tests/child_log.h"
#include "tests/text_file.h"

namespace relpos::test {

// Tests that start several ranks need the Gloo backend. Debian's LibTorch with libgloo-dev has it
// (test_dist checks that such a build does); a pytorch.org LibTorch ships no gloo headers, and
// there such a test says it was skipped instead of failing on the missing backend.
inline bool gloo_built() {
  const auto b = available_backends();
  return std::find(b.begin(), b.end(), "gloo") != b.end();
}
#define RELPOS_SKIP_WITHOUT_GLOO()                                              \
  do {                                                                          \
    if (!::relpos::test::gloo_built()) {                                        \
      MESSAGE("this relpos was built without Gloo: multi-process test skipped"); \
      return;                                                                   \
    }                                                                           \
  } while (0)

// A child process running RELPOS_BINARY with `args`; stdout and stderr go to `log`.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& log) : log_(log) {
    argv_.push_back(RELPOS_BINARY);
    argv_.insert(argv_.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
      ::setpgid(0, 0);  // a signal to this test's process group must not reach it
      std::vector<std::string> all{RELPOS_BINARY};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
      ChildLog::instance().note(argv_, "still running when the test stopped waiting (killed by it)",
                                output());
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  bool running() {
    if (reaped_) return false;
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      status_ = st;
      ChildLog::instance().note(
          argv_, wait_status_text(st) + " (stdout and stderr in " + log_ + ")", output());
      return false;
    }
    return true;
  }
  // Exit code (128 + signal when killed by one); -1 when it did not end within `seconds`.
  int wait(double seconds = kPatienceS) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (running()) {
      if (std::chrono::steady_clock::now() > end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }
  std::string output() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string log_;
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// Runs RELPOS_BINARY to the end; returns (exit code, output).
inline std::pair<int, std::string> run_relpos(const std::vector<std::string>& args,
                                              const std::string& log, double seconds = kPatienceS) {
  Child c(args, log);
  const int code = c.wait(seconds);
  return {code, c.output()};
}

inline int64_t count_lines(const std::string& path) {
  std::ifstream in(path);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.back() == '}') ++n;
  return n;
}

// Polls `cond` every 2 ms until it holds (true) or `seconds` pass (false) or `alive` says the
// process being watched ended (false).
inline bool wait_until(const std::function<bool()>& cond, double seconds = kPatienceS,
                       const std::function<bool()>& alive = {}) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    if (alive && !alive()) return cond();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Moves this thread, and the children it starts from now on, into a mount namespace of its own
// (as `unshare -m` does), where mounts stay private: a tmpfs a test mounts is never seen by the
// rest of the machine, and goes with the process even when the test crashes. Once per process;
// "" on success, else why not (not root, no CAP_SYS_ADMIN, a container that forbids it).
inline std::string enter_private_mount_namespace() {
  static const std::string why = []() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0)
      return std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
    if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return std::string("making / private: ") + std::strerror(errno);
    return "";
  }();
  return why;
}

// A tmpfs of `size` mounted on `dir` (created) for the test's lifetime, `ro` for a read-only
// one, in this process's private mount namespace. ok() is false where that is not allowed (not
// root, no CAP_SYS_ADMIN): the test then skips what needs it, saying so with why_not().
class TmpfsMount {
 public:
  TmpfsMount(const std::string& dir, const std::string& size, bool ro = false) : dir_(dir) {
    std::filesystem::create_directories(dir);
    why_not_ = enter_private_mount_namespace();
    if (!why_not_.empty()) return;
    const std::string opts = "size=" + size;
    ok_ = ::mount("tmpfs", dir.c_str(), "tmpfs", ro ? MS_RDONLY : 0, opts.c_str()) == 0;
    if (!ok_) why_not_ = std::string("mount -t tmpfs: ") + std::strerror(errno);
  }
  ~TmpfsMount() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  bool ok() const { return ok_; }
  std::string why_not() const { return why_not_; }

 private:
  std::string dir_;
  bool ok_ = false;
  std::string why_not_;
};

// Writes zeros to `path` until the file system is full (ENOSPC). Returns the bytes written.
inline int64_t fill_disk(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  std::vector<char> block(4096, 0);
  int64_t total = 0;
  while (true) {
    const ssize_t w = ::write(fd, block.data(), block.size());
    if (w <= 0) break;
    total += w;
  }
  ::fsync(fd);
  ::close(fd);
  return total;
}

}  // namespace relpos::test
