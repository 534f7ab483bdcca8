#include "model/model_root.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace fs = std::filesystem;

namespace deltafin {

std::string resolve_model_root(const std::string& flag_value) {
  if (!flag_value.empty()) return fs::absolute(flag_value).lexically_normal().string();
  if (const char* e = std::getenv("DELTAFIN_MODEL_ROOT"); e && *e) return fs::absolute(e).lexically_normal().string();
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/deltafin/models/kimi-k3";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/deltafin/models/kimi-k3";
  throw Error("no model folder: HOME is not set", "pass --model-root DIR or set DELTAFIN_MODEL_ROOT");
}

std::string state_dir(const std::string& model_root) { return model_root + "/.deltafin"; }

std::string install_dir(const std::string& model_root, bool is_k3, const std::string& folder) {
  return is_k3 ? model_root : model_root + "/addons/" + folder;
}

void fsync_dir_of(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + tmp + ": " + std::strerror(errno), "check permissions and free space");
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error("cannot write " + tmp + ": " + std::strerror(e), "check free space");
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error("cannot flush " + tmp + ": " + std::strerror(errno), "check the disk");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error("cannot publish " + path + ": " + std::strerror(e), "check permissions");
  }
  fsync_dir_of(path);
}

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path, "run deltafin doctor");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace deltafin
