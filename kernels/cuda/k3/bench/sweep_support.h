#pragma once
// What the lab sweeps of deltafin-cuda-k3-bench share besides their timer (call_timer.cuh): the
// entry point's device check and error handling, and the escaping of the names their JSON carries.
#include <cstdio>
#include <exception>
#include <string>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda::bench {

// A string as the inside of a JSON string literal (variant names and device names carry no control
// characters; quotes and backslashes are escaped).
inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

// Runs `sweep` when a CUDA device is usable: its exit status, 2 with "SKIP: why" when there is no
// device, 3 with the error when it throws.
template <typename F>
int run_sweep_on_device(F&& sweep) {
  std::string why;
  if (!device_available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 2;
  }
  try {
    return sweep();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
}

}  // namespace deltafin::cuda::bench
