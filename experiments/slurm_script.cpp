// `relpos sweep --emit-slurm FILE`: the sweep as a SLURM array job, one array element per point,
// each running the `relpos train` command the sweep would run (resuming from its checkpoint when
// requeued). tests/test_slurm.cpp lints the script with shellcheck.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/process.h"
#include "core/util/threads.h"
#include "experiments/sweep.h"

namespace relpos {
namespace fs = std::filesystem;

namespace {

// A word for bash: as is when it holds only safe characters, else in single quotes.
std::string shell_word(const std::string& w) {
  const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789_-+=.,/:@%") == std::string::npos;
  if (plain) return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The script's opening: what it does, how to submit it, and the #SBATCH lines.
std::string slurm_header(size_t points, int64_t cpus, const std::string& out,
                         const std::string& relpos_binary) {
  std::string s = "#!/bin/bash\n";
  s += "# SLURM array job written by `relpos sweep --emit-slurm`: one array element per grid point,\n";
  s += "# each running the `relpos train` command of `relpos sweep` (docs/scaling.md).\n";
  s += "# Submit with: sbatch THIS_FILE   (adjust the #SBATCH lines to your cluster: partition,\n";
  s += "# account, --gres=gpu:1 with --set device=cuda, a %N suffix on --array to cap parallel runs).\n";
  s += "# A finished point is skipped and an unfinished one resumed from its checkpoint, so a\n";
  s += "# requeued or resubmitted element continues where it stopped.\n";
  s += "# Preemption and time limits: relpos checkpoints and stops on SIGTERM. --signal sends this\n";
  s += "# shell (B: only the shell; keep it, SIGUSR1 would end relpos without a checkpoint) SIGUSR1\n";
  s += "# 120 s before the time limit: the trap below forwards SIGTERM to relpos, waits for its\n";
  s += "# checkpoint and requeues the element, at most RELPOS_MAX_REQUEUES times (default 3, counted\n";
  s += "# by SLURM_RESTART_COUNT). A preempted element (SIGTERM to the job) checkpoints the same way\n";
  s += "# and SLURM requeues it itself (--requeue).\n";
  s += "#SBATCH --job-name=relpos-sweep\n";
  s += fmt::format("#SBATCH --array=0-{}\n", points - 1);
  s += fmt::format("#SBATCH --cpus-per-task={}\n", cpus);
  s += "#SBATCH --time=24:00:00\n";
  s += "#SBATCH --signal=B:USR1@120\n";
  s += "#SBATCH --requeue\n";
  s += "#SBATCH --open-mode=append\n";  // a requeued element adds to its log
  s += fmt::format("#SBATCH --output={}/slurm-%A_%a.log\n", out);  // SLURM needs the folder
  s += "set -euo pipefail\n";
  s += fmt::format("RELPOS=\"${{RELPOS:-{}}}\"\n", relpos_binary);
  s += "TASK=\"${SLURM_ARRAY_TASK_ID:?submit with sbatch, or set SLURM_ARRAY_TASK_ID=N to run point N}\"\n";
  return s;
}

// The `case` branch of point `i`: its name, folder, fresh-start arguments and threads.
std::string slurm_case(const SweepOptions& o, size_t i, const SweepPoint& point,
                       const ResolvedPoint& resolved, const std::string& out) {
  std::string s;
  const std::string dir = shell_word((fs::path(out) / point.name).string());
  std::string fresh = "--overwrite";
  for (const auto& c : o.configs) fresh += " --config " + shell_word(fs::absolute(c).string());
  for (const auto& x : o.sets) fresh += " --set " + shell_word(x);
  for (const auto& x : point.overrides) fresh += " --set " + shell_word(x);
  if (!o.init_from.empty())
    fresh += " --init-from " + shell_word(fs::absolute(init_from_dir(o, point)).string());
  const std::string threads = o.threads <= 0 && resolved.threads > 0
                                  ? fmt::format("threads={}", resolved.threads)
                                  : std::string("threads=$THREADS");
  s += fmt::format("  {})\n", i);
  s += fmt::format("    NAME={}\n", shell_word(point.name));
  s += fmt::format("    DIR={}\n", dir);
  s += fmt::format("    FRESH=({})\n", fresh);
  s += fmt::format("    THREADS_SET=\"{}\" ;;\n", threads);
  return s;
}

}  // namespace

std::string slurm_script(const SweepOptions& o, const std::vector<SweepPoint>& points) {
  // A point whose config does not load is an error now, not on the cluster.
  const std::vector<ResolvedPoint> resolved = resolve_points(o, points);
  // Absolute paths: the job runs wherever SLURM starts it.
  const std::string out = fs::absolute(o.out_dir).lexically_normal().string();
  // CPUs per element: --threads, else the most a point's config asks for, else 4. A run gets
  // the element's CPUs as its threads unless its config names a count (sweep_run_threads).
  int64_t cpus = o.threads;
  if (cpus <= 0)
    for (const auto& r : resolved) cpus = std::max(cpus, r.threads);
  if (cpus <= 0) cpus = 4;
  std::string s = slurm_header(points.size(), cpus, out, o.relpos_binary);
  // The element's CPUs, for the points whose config names no thread count (shellcheck: an unused
  // variable is a warning).
  bool uses_cpus = false;
  for (const auto& r : resolved) uses_cpus |= o.threads > 0 || r.threads <= 0;
  if (uses_cpus) s += "THREADS=\"${SLURM_CPUS_PER_TASK:-1}\"\n";
  s += "MAX_REQUEUES=\"${RELPOS_MAX_REQUEUES:-3}\"\n";
  s += "case \"$TASK\" in\n";
  for (size_t i = 0; i < points.size(); ++i) s += slurm_case(o, i, points[i], resolved[i], out);
  s += "  *) echo \"no grid point $TASK (0..";
  s += std::to_string(points.size() - 1);
  s += ")\" >&2; exit 1 ;;\n";
  s += "esac\n";
  s += R"SH(if [ -f "$DIR/result.json" ]; then echo "$NAME already finished"; exit 0; fi
if [ -f "$DIR/checkpoint.pt" ]; then
  echo "$NAME: resuming from $DIR/checkpoint.pt"
  ARGS=(--resume)
else
  ARGS=("${FRESH[@]}")
fi
CHILD=""
STATUS=0
# The handlers below run from the traps only, which shellcheck does not see (SC2317).
# SIGTERM to relpos (it saves a checkpoint and stops), then wait for it.
# shellcheck disable=SC2317
stop_run() {
  if [ -n "$CHILD" ]; then
    kill -TERM "$CHILD" 2>/dev/null || true
    wait "$CHILD" || STATUS=$?
  fi
}
# shellcheck disable=SC2317
on_usr1() {
  echo "$NAME: the time limit is near: stopping at a checkpoint" >&2
  stop_run
  if [ -f "$DIR/result.json" ]; then exit 0; fi
  local restarts="${SLURM_RESTART_COUNT:-0}"
  if [ "$restarts" -ge "$MAX_REQUEUES" ]; then
    echo "$NAME: not requeued: requeued $restarts times already (RELPOS_MAX_REQUEUES=$MAX_REQUEUES); submit again to continue" >&2
    exit 1
  fi
  echo "$NAME: requeueing (requeue $((restarts + 1)) of $MAX_REQUEUES)" >&2
  scontrol requeue "${SLURM_JOB_ID:?no SLURM_JOB_ID to requeue}"
  exit 0
}
# shellcheck disable=SC2317
on_term() {
  echo "$NAME: SIGTERM (preempted or cancelled): stopping at a checkpoint" >&2
  stop_run
  exit "$STATUS"
}
trap on_usr1 USR1
trap on_term TERM
# In the background, so that this shell can run its traps while relpos trains.
"$RELPOS" train --out "$DIR" --quiet "${ARGS[@]}" --set "$THREADS_SET" &
CHILD=$!
wait "$CHILD" || STATUS=$?
exit "$STATUS"
)SH";
  return s;
}

}  // namespace relpos
