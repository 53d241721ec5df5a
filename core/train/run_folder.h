// The run folder of `relpos train` (trainer.h lists its files): the checks made before any
// work starts, the lock held while the run writes, and the small text files written atomically.
// Internal to core/train.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/train/trainer.h"
#include "core/util/folder_lock.h"

namespace relpos {

// Makes sure DIR can take this run before any work starts: --out given; with --resume a
// checkpoint to resume; DIR creatable and writable; no other process writing it (the returned
// lock, held for the whole run); a run already in DIR only replaced with --overwrite (then its
// files are removed). Throws ConfigError/RunError naming DIR.
std::unique_ptr<FolderLock> prepare_out_dir(const TrainOptions& o);

// Bytes free for an unprivileged writer on the file system holding `dir` (statvfs f_bavail).
// -1 when it cannot be known.
int64_t free_bytes(const std::string& dir);

// Throws RunError when the file system of `dir` has fewer than `need` bytes free, naming both.
void check_free_space(const std::string& dir, int64_t need, const std::string& what);

// Writes `text` to `path` through `path.tmp` and a rename. Throws RunError when it cannot.
void write_text_atomic(const std::string& path, const std::string& text);

}  // namespace relpos
