#pragma once
// A whole safetensors file in memory, for goldens. Qt-free, so the GPU check libraries
// (deltafin-cuda-k3, deltafin-qwen3-gpu-check run on machines without Qt) share it with the Qt tests.
#include <cstdint>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace deltafin::test {

struct LoadedTensors {
  SafetensorsHeader header;
  std::vector<uint8_t> bytes;
  bool has(const std::string& name) const { return header.find(name) != nullptr; }
  std::vector<float> f32(const std::string& name) const;
  std::vector<int64_t> i64(const std::string& name) const;  // I64 or I32 widened
  std::vector<int64_t> shape(const std::string& name) const;
};
LoadedTensors load_tensors(const std::string& path);

}  // namespace deltafin::test
