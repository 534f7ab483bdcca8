#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace deltafin {

// Writes a safetensors file whose tensor bytes are produced on demand, so
// multi-gigabyte files are written without holding them in memory.
class SafetensorsWriter {
 public:
  // fill(dst, n) must write exactly n bytes; it may be called several times in order for large tensors.
  using Fill = std::function<void(uint8_t* dst, uint64_t n, uint64_t offset)>;
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, Fill fill);
  void add_bytes(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  // Writes `path` atomically (to path.tmp, then renamed). Returns the file size.
  uint64_t write(const std::string& path,
                 const std::map<std::string, std::string>& metadata = {{"format", "pt"}}) const;
  uint64_t data_bytes() const;
  std::vector<std::string> names() const;

 private:
  struct Item {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t bytes;
    Fill fill;
  };
  std::vector<Item> items_;
};

}  // namespace deltafin
