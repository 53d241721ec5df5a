#include "core/dist/launch.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <thread>

#include "core/util/errors.h"
#include "core/util/process.h"
#include "core/util/signals.h"

extern char** environ;

namespace relpos {

namespace {

using Clock = std::chrono::steady_clock;

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    static const std::map<int, const char*> names = {
        {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},  {SIGSEGV, "SIGSEGV"},
        {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"}, {SIGILL, "SIGILL"}};
    auto it = names.find(sig);
    return it != names.end() ? fmt::format("killed by {}", it->second)
                             : fmt::format("killed by signal {}", sig);
  }
  return fmt::format("status {}", status);
}

// The environment of one rank: this process's, with the launch variables replaced.
std::vector<std::string> rank_environment(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (!set.count(key)) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

std::string LaunchResult::summary() const {
  std::string s;
  for (const auto& r : ranks)
    s += fmt::format("{}rank {} {} after {:.1f}s", s.empty() ? "" : "; ", r.rank, r.how, r.seconds);
  return s;
}

std::string LaunchResult::failure() const {
  std::string first;
  if (still_running.empty()) {
    first = fmt::format("rank {} failed first", first_failed);
  } else {
    std::string ranks;
    for (const int64_t r : still_running) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    first = fmt::format("rank {} lost its peer first, while rank{} {} still ran (hung?)", first_failed,
                        still_running.size() > 1 ? "s" : "", ranks);
  }
  return fmt::format("{} ({})", first, summary());
}

int64_t free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw RunError(fmt::format("cannot open a socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    throw RunError("cannot find a free TCP port on 127.0.0.1: " + why);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

LaunchResult launch_local(const LaunchOptions& o) {
  if (o.nproc < 1) throw ConfigError(fmt::format("--nproc {} (expected >= 1)", o.nproc));
  if (o.nnodes < 1) throw ConfigError(fmt::format("--nnodes {} (expected >= 1)", o.nnodes));
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw ConfigError(fmt::format("--node-rank {} (expected 0..{})", o.node_rank, o.nnodes - 1));
  if (o.nnodes > 1 && o.master_port == 0)
    throw ConfigError("--nnodes > 1 needs --master-addr HOST and --master-port PORT (the same on every node)",
                      "HOST is node 0's address, reachable from every node; PORT a free port there");
  if (o.args.empty()) throw ConfigError("launch: no command to run");
  const int64_t port = o.master_port > 0 ? o.master_port : free_tcp_port();
  const int64_t world = o.nproc * o.nnodes;

  install_interrupt_handlers();
  const auto t0 = Clock::now();
  std::map<pid_t, int64_t> alive;  // pid -> rank
  for (int64_t local = 0; local < o.nproc; ++local) {
    SpawnOptions spawn;
    spawn.env = rank_environment({{"RANK", std::to_string(o.node_rank * o.nproc + local)},
                                  {"WORLD_SIZE", std::to_string(world)},
                                  {"LOCAL_RANK", std::to_string(local)},
                                  {"LOCAL_WORLD_SIZE", std::to_string(o.nproc)},
                                  {"MASTER_ADDR", o.master_addr},
                                  {"MASTER_PORT", std::to_string(port)},
                                  {"RELPOS_RESTART_COUNT", std::to_string(o.restart_count)}});
    spawn.only_env = true;
    spawn.new_process_group = true;  // Ctrl-C goes to the launcher only
    spawn.stop_with_parent = true;   // the launcher died: checkpoint and stop
    try {
      alive[spawn_child(o.args, spawn)] = o.node_rank * o.nproc + local;
    } catch (const RunError& e) {
      for (const auto& [p, r] : alive) kill(p, SIGKILL);
      throw RunError(fmt::format("cannot start rank {}: {}", local, e.what()));
    }
  }

  LaunchResult res;
  // A rank that fails because a peer died (PeerLost, or SIGPIPE where a socket write still kills)
  // is a consequence: the peer's own failure is the first one even when both are reaped together.
  auto is_consequence = [](int status) { return status == kPeerLostExitCode || status == 128 + SIGPIPE; };
  constexpr double kSettleSeconds = 2.0;
  int64_t consequence_rank = -1;
  Clock::time_point consequence_at{};
  auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  bool forwarded = false, termed = false;
  Clock::time_point failed_at{}, termed_at{};
  auto signal_all = [&](int sig) {
    for (const auto& [pid, rank] : alive) kill(pid, sig);
  };
  while (!alive.empty()) {
    if (const auto done = reap_child()) {
      auto it = alive.find(done->pid);
      if (it == alive.end()) continue;
      RankExit e{it->second, done->code(), describe_status(done->status), since(t0)};
      if (termed && e.status != 0) e.how += " (stopped by the launcher)";
      alive.erase(it);
      if (e.status != 0 && res.first_failed < 0 && !res.interrupted) {
        if (is_consequence(e.status)) {
          if (consequence_rank < 0) {
            consequence_rank = e.rank;
            consequence_at = Clock::now();
          }
        } else {
          res.first_failed = e.rank;
          failed_at = Clock::now();
        }
      }
      res.ranks.push_back(e);
      continue;
    }
    // Only consequences so far, and nothing else failed for a while: the earliest one counts.
    if (res.first_failed < 0 && consequence_rank >= 0 && since(consequence_at) > kSettleSeconds) {
      res.first_failed = consequence_rank;
      failed_at = consequence_at;
      for (const auto& [pid, rank] : alive) res.still_running.push_back(rank);
      std::sort(res.still_running.begin(), res.still_running.end());
    }
    if (interrupt_requested() && !forwarded) {
      signal_all(SIGTERM);  // one signal each: the ranks agree on a step and rank 0 checkpoints
      forwarded = res.interrupted = true;
    }
    if (res.first_failed >= 0 && !termed && since(failed_at) > o.grace_seconds) {
      signal_all(SIGTERM);
      termed = true;
      termed_at = Clock::now();
    }
    if (termed && since(termed_at) > 5) signal_all(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (res.first_failed < 0 && consequence_rank >= 0) res.first_failed = consequence_rank;
  return res;
}

}  // namespace relpos
