#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace deltafin {

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offset inside the data region
  uint64_t end = 0;
  uint64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

// A parsed safetensors header. Parsing is strict: every bound is checked
// against the file size, so a truncated or corrupt file is an Error, never a crash.
struct SafetensorsHeader {
  uint64_t header_len = 0;
  uint64_t data_start = 0;  // = 8 + header_len
  uint64_t file_size = 0;
  std::vector<TensorInfo> tensors;  // in header order
  std::map<std::string, std::string> metadata;

  // Parses the first bytes of a file (`prefix` must hold at least 8 + header_len bytes).
  static SafetensorsHeader parse(const uint8_t* prefix, uint64_t prefix_len, uint64_t file_size,
                                 const std::string& origin);
  // Reads and parses the header of a file on disk without touching the data.
  static SafetensorsHeader read(const std::string& path);

  const TensorInfo* find(const std::string& name) const;
};

inline constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;  // 100 MiB, as the reference library

}  // namespace deltafin
