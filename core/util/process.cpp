#include "core/util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/util/errors.h"

extern char** environ;

namespace relpos {

namespace {

// argv and envp as the exec call wants them, built before fork().
struct ExecArgs {
  std::vector<char*> argv, envp;
  ExecArgs(const std::vector<std::string>& args, const SpawnOptions& o) {
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : o.env) envp.push_back(const_cast<char*>(e.c_str()));
    if (!o.only_env)
      for (char** e = environ; e != nullptr && *e != nullptr; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
  }
};

// In the child, between fork() and exec: async-signal-safe calls only. `out_fd`/`err_fd`: where
// stdout and stderr go (-1: unchanged, or the log file when there is one).
[[noreturn]] void exec_child(const ExecArgs& a, const SpawnOptions& o, pid_t parent, int out_fd,
                             int err_fd) {
  if (o.ignore_interrupt) signal(SIGINT, SIG_IGN);
  if (o.new_process_group) setpgid(0, 0);
#ifdef __linux__
  if (o.stop_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);  // the parent died before prctl
  }
#endif
  if (!o.log_file.empty() && out_fd < 0) {
    const int fd = open(o.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
  }
  if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
  if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) _exit(126);
  if (o.limits.timeout_s > 0) alarm(static_cast<unsigned>(o.limits.timeout_s));
  if (o.limits.max_memory_mb > 0) {
    rlimit as_limit{};
    as_limit.rlim_cur = as_limit.rlim_max =
        static_cast<rlim_t>(o.limits.max_memory_mb * 1024.0 * 1024.0);
    setrlimit(RLIMIT_AS, &as_limit);
  }
  execve(a.argv[0], a.argv.data(), a.envp.data());
  const char msg[] = "relpos: cannot execute the child program\n";
  (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
  _exit(127);
}

pid_t fork_exec(const std::vector<std::string>& argv, const SpawnOptions& o, int out_fd,
                int err_fd) {
  if (argv.empty()) throw RunError("cannot start a child process: no program given");
  const ExecArgs a(argv, o);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0)
    throw RunError(std::string("cannot start ") + argv[0] + ": fork failed: " + std::strerror(errno));
  if (pid == 0) exec_child(a, o, parent, out_fd, err_fd);
  return pid;
}

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

pid_t spawn_child(const std::vector<std::string>& argv, const SpawnOptions& options) {
  return fork_exec(argv, options, -1, -1);
}

ChildResult run_child(const std::vector<std::string>& argv, const SpawnOptions& options,
                      bool merge_output) {
  int out_pipe[2], err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || (!merge_output && pipe2(err_pipe, O_CLOEXEC) != 0))
    throw RunError(std::string("cannot start ") + (argv.empty() ? "a child" : argv[0]) +
                   ": pipe() failed: " + std::strerror(errno));
  SpawnOptions o = options;
  o.log_file.clear();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork_exec(argv, o, out_pipe[1], merge_output ? out_pipe[1] : err_pipe[1]);
  close(out_pipe[1]);
  if (!merge_output) close(err_pipe[1]);

  ChildResult r;
  bool out_open = true, err_open = !merge_output;
  while (out_open || err_open) {
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    if (poll(fds, err_open ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) drain(out_pipe[0], r.out, out_open);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) drain(err_pipe[0], r.err, err_open);
  }
  close(out_pipe[0]);
  if (!merge_output) close(err_pipe[0]);

  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR)
      throw RunError(std::string("waiting for ") + argv[0] + ": wait4() failed: " + std::strerror(errno));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.max_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // Linux: kB
  r.user_s = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec * 1e-6;
  r.system_s = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec * 1e-6;
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.timed_out = r.signal == SIGALRM && o.limits.timeout_s > 0;
  }
  return r;
}

ChildResult run_child(const std::string& program, const std::vector<std::string>& args,
                      const ChildLimits& limits, const std::vector<std::string>& extra_env) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions o;
  o.env = extra_env;
  o.limits = limits;
  return run_child(argv, o);
}

int ChildExit::code() const {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::optional<ChildExit> reap_child() {
  int status = 0;
  const pid_t pid = waitpid(-1, &status, WNOHANG);
  if (pid <= 0) return std::nullopt;
  return ChildExit{pid, status};
}

std::optional<ForkedCall> call_in_child(const std::function<std::string()>& fn, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    std::string error;
    try {
      error = fn();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error.empty() && write(fds[1], error.data(), error.size()) < 0) error = "?";
    _exit(error.empty() ? 0 : 1);
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ForkedCall r;
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    close(fds[0]);
    r.timed_out = true;
    return r;
  }
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.error.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  if (done < 0) return std::nullopt;  // not ours to reap after all: nothing is known
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && r.error.empty()) r.error = "?";
  return r;
}

}  // namespace relpos
