// An advisory lock on a run or experiment folder (DIR/.relpos.lock, flock), held by the process
// that writes into the folder: `relpos train` for the whole run, `relpos eval` while it writes
// its table into run.h5, `relpos sweep` on the experiment folder. A second writer gets a clear
// RunError instead of two processes writing one HDF5 file. The kernel drops the lock when the
// holder exits in any way, kill -9 included, so a crashed run never leaves a stale lock. The
// holder removes the file when it lets go (a failed run leaves no lock file behind); after kill -9
// the file stays, holding no lock.
#pragma once

#include <string>

namespace relpos {

class FolderLock {
 public:
  // Locks `dir` (which must exist) for `what` ("training", "evaluation", ...). Throws RunError
  // naming the folder and the holder's pid and activity when another process holds it, or when
  // the lock file cannot be created (the folder is not writable).
  FolderLock(const std::string& dir, const std::string& what);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  static std::string lock_path(const std::string& dir);
  // The holder the lock file of `dir` names ("pid 4242, training") when that process is alive on
  // this machine, else "" (no lock file, or one left by a killed process). Reads the file only:
  // probing with flock() would make a process that starts at that moment fail to lock.
  static std::string live_holder(const std::string& dir);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace relpos
