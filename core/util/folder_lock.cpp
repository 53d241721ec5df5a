#include "core/util/folder_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/util/errors.h"

namespace relpos {

std::string FolderLock::lock_path(const std::string& dir) {
  return (std::filesystem::path(dir) / ".relpos.lock").string();
}

FolderLock::FolderLock(const std::string& dir, const std::string& what) : path_(lock_path(dir)) {
  // The holder removes the lock file when it lets go (so a folder is left as the run left it).
  // A process that opened the file just before that removal could lock the removed file: after
  // locking, the file at the path must still be the one locked, else try again.
  for (int attempt = 0;; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw RunError(fmt::format("{}: cannot create the lock file {}: {}", dir, path_,
                                 std::strerror(errno)),
                     "check that the folder exists and is writable");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char buf[256] = {};
      const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
      ::close(fd_);
      fd_ = -1;
      std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      if (err == EWOULDBLOCK)
        throw RunError(fmt::format("{}: another relpos process is using this folder ({})", dir,
                                   holder.empty() ? "pid unknown" : holder),
                       "wait for it to finish, or stop it (SIGTERM makes a training run save a "
                       "checkpoint); two processes must not write one run");
      throw RunError(fmt::format("{}: cannot lock {}: {}", dir, path_, std::strerror(err)));
    }
    struct stat held {}, now {};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &now) == 0 &&
        held.st_dev == now.st_dev && held.st_ino == now.st_ino)
      break;
    ::close(fd_);  // the file was removed (or replaced) after we opened it
    fd_ = -1;
    if (attempt >= 100)
      throw RunError(fmt::format("{}: the lock file {} keeps being replaced", dir, path_),
                     "two processes must not write one run folder");
  }
  const std::string me = fmt::format("pid {}, {}\n", ::getpid(), what);
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t w = ::pwrite(fd_, me.data(), me.size(), 0);
    (void)w;  // the pid is information for the message above, not part of the lock
  }
}

std::string FolderLock::live_holder(const std::string& dir) {
  std::ifstream in(lock_path(dir));
  std::string holder;
  if (!in || !std::getline(in, holder)) return "";
  long pid = 0;
  if (std::sscanf(holder.c_str(), "pid %ld", &pid) != 1 || pid <= 0) return "";
  // kill(pid, 0) sends nothing: it only asks whether the process exists (EPERM: it does, and
  // belongs to another user).
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return "";
  return holder;
}

FolderLock::~FolderLock() {
  if (fd_ < 0) return;
  // Removed while still held (see the constructor), then closing drops the flock.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace relpos
