#pragma once
// The k3-tiny greedy goldens as the split and multi-GPU checks compare against them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin::cuda::check {

struct Greedy {
  std::vector<int32_t> prompt;
  std::vector<int64_t> want;
  size_t clear = 0;  // steps whose golden margin is clear
};

// Every greedy golden of the fixture (golden.json and golden.safetensors in `dir`).
std::vector<Greedy> greedy_goldens(const std::string& dir);

}  // namespace deltafin::cuda::check
