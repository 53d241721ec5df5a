#include "core/bench/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "core/util/errors.h"

extern char** environ;

namespace relpos {

std::string ChildResult::describe(int timeout_s, double max_memory_mb) const {
  if (timed_out) return "timed out after " + std::to_string(timeout_s) + " s";
  if (signal != 0) {
    std::string s = "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    if (max_memory_mb > 0)
      s += " under the address-space limit of " + std::to_string(std::lround(max_memory_mb)) +
           " MB (--max-memory): out of memory?";
    else if (signal == SIGKILL)
      s += ": out of memory?";
    return s;
  }
  return "exit code " + std::to_string(exit_code);
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw RunError(std::string("cannot read /proc/self/exe: ") + std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

namespace {

void drain(int fd, std::string& into, bool& open) {
  char buf[65536];
  const ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0) {
    into.append(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    open = false;
  }
}

}  // namespace

double physical_memory_mb() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * page / (1024.0 * 1024.0) : 0.0;
}

ChildResult run_child(const std::string& program, const std::vector<std::string>& args,
                      const ChildLimits& limits, const std::vector<std::string>& extra_env) {
  const int timeout_s = limits.timeout_s;
  rlimit as_limit{};
  as_limit.rlim_cur = as_limit.rlim_max =
      static_cast<rlim_t>(limits.max_memory_mb * 1024.0 * 1024.0);
  // argv and envp are built before fork(): the child only calls async-signal-safe functions.
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;  // extra_env first: getenv() takes the first NAME=
  for (const auto& e : extra_env) envp.push_back(const_cast<char*>(e.c_str()));
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw RunError(std::string("bench: pipe() failed: ") + std::strerror(errno));
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw RunError(std::string("bench: fork() failed: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    if (timeout_s > 0) alarm(static_cast<unsigned>(timeout_s));  // survives execve
    if (limits.max_memory_mb > 0) setrlimit(RLIMIT_AS, &as_limit);
    execve(program.c_str(), argv.data(), envp.data());
    const char msg[] = "bench: execve failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  ChildResult r;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) drain(out_pipe[0], r.out, out_open);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) drain(err_pipe[0], r.err, err_open);
  }
  close(out_pipe[0]);
  close(err_pipe[0]);

  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) throw RunError(std::string("bench: wait4() failed: ") + std::strerror(errno));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.max_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // Linux: kB
  r.user_s = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec * 1e-6;
  r.system_s = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec * 1e-6;
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.timed_out = r.signal == SIGALRM && timeout_s > 0;
  }
  return r;
}

}  // namespace relpos
