#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace deltafin {

// How the Hub identifies a file's content: LFS files by the SHA-256 of their
// bytes, plain git files by the git blob id (SHA-1 of "blob <size>\0" + bytes).
enum class HashKind { Sha256, GitBlobSha1 };

// An incremental digest of either kind, lower-case hex output.
class ContentHasher {
 public:
  ContentHasher(HashKind kind, uint64_t total_size);
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;
  void update(const void* data, size_t n);
  std::string hex_digest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Hashes a whole file; `on_bytes` sees the running count (for progress).
std::string hash_file(const std::string& path, HashKind kind, const std::function<void(uint64_t)>& on_bytes = {});

}  // namespace deltafin
