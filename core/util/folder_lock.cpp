#include "core/util/folder_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/util/errors.h"

namespace relpos {

std::string FolderLock::lock_path(const std::string& dir) {
  return (std::filesystem::path(dir) / ".relpos.lock").string();
}

FolderLock::FolderLock(const std::string& dir, const std::string& what) {
  const std::string path = lock_path(dir);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw RunError(fmt::format("{}: cannot create the lock file {}: {}", dir, path,
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
    throw RunError(fmt::format("{}: cannot lock {}: {}", dir, path, std::strerror(err)));
  }
  const std::string me = fmt::format("pid {}, {}\n", ::getpid(), what);
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t w = ::pwrite(fd_, me.data(), me.size(), 0);
    (void)w;  // the pid is information for the message above, not part of the lock
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock; the file stays (harmless, tiny)
}

}  // namespace relpos
