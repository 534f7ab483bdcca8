#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace deltafin {

// A read-only memory map of a whole file. Weights are used straight from the
// shipped bytes; the map never copies or converts them.
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// Reads exactly n bytes at offset, or throws naming the file.
void read_exact(int fd, void* dst, uint64_t n, uint64_t offset, const std::string& path);

}  // namespace deltafin
