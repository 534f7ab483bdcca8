#include "install/file_hash.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace deltafin {

struct ContentHasher::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

ContentHasher::ContentHasher(HashKind kind, uint64_t total_size) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, kind == HashKind::Sha256 ? EVP_sha256() : EVP_sha1(), nullptr) != 1)
    throw Error("OpenSSL could not start a digest", "check the OpenSSL installation");
  if (kind == HashKind::GitBlobSha1) {
    std::string prefix = "blob " + std::to_string(total_size);
    update(prefix.data(), prefix.size() + 1);  // the terminating NUL is part of git's object header
  }
}

ContentHasher::~ContentHasher() = default;

void ContentHasher::update(const void* data, size_t n) {
  if (EVP_DigestUpdate(impl_->ctx, data, n) != 1) throw Error("OpenSSL digest update failed");
}

std::string ContentHasher::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, md, &len) != 1) throw Error("OpenSSL digest final failed");
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[md[i] >> 4];
    s += hex[md[i] & 15];
  }
  return s;
}

std::string hash_file(const std::string& path, HashKind kind, const std::function<void(uint64_t)>& on_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  off_t size = ::lseek(fd, 0, SEEK_END);
  ::lseek(fd, 0, SEEK_SET);
  ContentHasher h(kind, static_cast<uint64_t>(size));
  std::vector<char> buf(4 << 20);
  uint64_t done = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      throw Error("cannot read " + path + ": " + std::strerror(e), "check the disk");
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
    if (on_bytes) on_bytes(done);
  }
  ::close(fd);
  return h.hex_digest();
}

}  // namespace deltafin
