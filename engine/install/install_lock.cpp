#include "install/install_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "model/model_root.h"

namespace deltafin {

InstallLock::InstallLock(const std::string& model_root) {
  const std::string dir = state_dir(model_root);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = dir + "/install.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error("cannot create " + path + ": " + std::strerror(errno), "check that the model folder is writable");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw Error("another deltafin installer (pid " + holder + ") is working on " + model_root,
                "wait for it to finish or stop it; the lock frees itself when that process ends");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // The pid is only a courtesy for the error message above; the lock itself holds.
  }
}

InstallLock::~InstallLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace deltafin
