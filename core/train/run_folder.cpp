#include "core/train/run_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/train/tensorboard_log.h"
#include "core/util/errors.h"

namespace relpos {
namespace fs = std::filesystem;

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw RunError(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
    out << text;
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp);
      throw RunError(fmt::format("{}: write failed (disk full?)", tmp),
                     "free some space; the previous file, if any, is unchanged");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw RunError(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
}

int64_t free_bytes(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<int64_t>(s.f_bavail) * static_cast<int64_t>(s.f_frsize);
}

void check_free_space(const std::string& dir, int64_t need, const std::string& what) {
  const int64_t have = free_bytes(dir);
  if (have < 0 || have >= need) return;
  throw RunError(fmt::format("{}: not enough free space: {} needs about {:.1f} MB, the file "
                             "system has {:.1f} MB free",
                             dir, what, need / 1e6, have / 1e6),
                 "free some space or choose another --out; nothing of the run was written");
}

std::unique_ptr<FolderLock> prepare_out_dir(const TrainOptions& o) {
  if (o.out_dir.empty()) throw ConfigError("train: --out DIR is required");
  const fs::path dir(o.out_dir);
  std::error_code ec;
  if (o.resume) {
    if (!fs::exists(run_checkpoint_path(o.out_dir)))
      throw RunError(fmt::format("{}: nothing to resume (no checkpoint.pt)", o.out_dir),
                     "start the run without --resume (with --overwrite if the folder holds files "
                     "of a run that never reached its first checkpoint)");
  }
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw RunError(fmt::format("{}: exists and is not a folder", o.out_dir),
                   "choose another --out");
  fs::create_directories(dir, ec);
  if (ec)
    throw RunError(fmt::format("{}: cannot create the output folder: {}", o.out_dir, ec.message()),
                   "choose a writable --out");
  {
    // Root ignores permission bits, so ask the file system itself (read-only mounts, quotas).
    const std::string probe = (dir / fmt::format(".write_test.{}", ::getpid())).string();
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      throw RunError(fmt::format("{}: the output folder is not writable: {}", o.out_dir,
                                 std::strerror(errno)),
                     "choose a writable --out");
    const bool ok = ::write(fd, "ok", 2) == 2;
    const int err = errno;
    ::close(fd);
    ::unlink(probe.c_str());
    if (!ok)
      throw RunError(fmt::format("{}: cannot write into the output folder: {}", o.out_dir,
                                 std::strerror(err)),
                     "free some space or choose another --out");
  }
  // From here on no other relpos process may write the folder.
  auto lock = std::make_unique<FolderLock>(o.out_dir, o.resume ? "training (resumed)" : "training");
  if (!o.init_from.empty()) {
    if (o.resume)
      throw ConfigError("train: --init-from starts a new run; --resume continues one from its own "
                        "checkpoint, so the two exclude each other");
    // Before anything is removed: --overwrite of the folder --init-from reads would delete the
    // very run the new one was to start from.
    std::error_code eq;
    if (fs::equivalent(o.init_from, o.out_dir, eq))
      throw ConfigError(fmt::format("train: --init-from {} is the output folder itself", o.init_from),
                        "write the fine-tuned run to another --out");
  }
  if (!o.resume) {
    const bool has_run = fs::exists(run_config_path(o.out_dir)) ||
                         fs::exists(run_checkpoint_path(o.out_dir)) ||
                         fs::exists(run_h5_path(o.out_dir));
    if (has_run && !o.overwrite) {
      if (run_finished(o.out_dir))
        throw RunError(fmt::format("{}: holds a finished run", o.out_dir),
                       "pass --overwrite to replace it, or choose another --out");
      throw RunError(fmt::format("{}: holds an unfinished run", o.out_dir),
                     "pass --resume to continue it, or --overwrite to start again");
    }
    if (has_run)
      for (const auto& p :
           {run_config_path(o.out_dir), run_checkpoint_path(o.out_dir), run_h5_path(o.out_dir),
            run_h5_path(o.out_dir) + ".shadow", run_result_path(o.out_dir),
            run_metrics_path(o.out_dir), run_split_path(o.out_dir), run_tokenizer_path(o.out_dir),
            run_vocab_path(o.out_dir),
            (dir / "eval_extrapolation.csv").string()})
        fs::remove(p, ec);
    // The old run's curves would otherwise show in TensorBoard beside the new run's.
    if (has_run) remove_run_event_files(o.out_dir);
  }
  return lock;
}

}  // namespace relpos
