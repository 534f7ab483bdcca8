#pragma once
#include <string>

namespace deltafin {

// Keeps two installers (CLI, GUI, a second terminal) from writing one model
// root at once. The kernel drops the lock when its holder dies, even by SIGKILL.
class InstallLock {
 public:
  explicit InstallLock(const std::string& model_root);  // throws Error naming the holder
  ~InstallLock();
  InstallLock(const InstallLock&) = delete;
  InstallLock& operator=(const InstallLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace deltafin
