// deltafin-cuda-bench: timing helpers shared by its parts (events around launches, medians).
#pragma once

#include <algorithm>
#include <vector>

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda::bench {

inline float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Mean time of launch(s) over s = 0 .. sets - 1, each bracketed by its own pair of events (untimed
// prepare(s) queued before it), median of 5 batches; two untimed rounds first.
template <class Prepare, class Launch>
float events_ms(int sets, Prepare&& prepare, Launch&& launch) {
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(sets));
  for (cudaEvent_t& e : ev) DELTAFIN_CUDA_CHECK(cudaEventCreate(&e));
  auto call = [&](int s, bool timed) {
    prepare(s);
    if (timed) DELTAFIN_CUDA_CHECK(cudaEventRecord(ev[2 * s]));
    launch(s);
    if (timed) DELTAFIN_CUDA_CHECK(cudaEventRecord(ev[2 * s + 1]));
  };
  call(0, false);
  call(1 % sets, false);
  std::vector<float> per;
  for (int b = 0; b < 5; ++b) {
    for (int s = 0; s < sets; ++s) call(s, true);
    DELTAFIN_CUDA_CHECK(cudaDeviceSynchronize());
    float sum = 0;
    for (int s = 0; s < sets; ++s) {
      float t = 0;
      DELTAFIN_CUDA_CHECK(cudaEventElapsedTime(&t, ev[2 * s], ev[2 * s + 1]));
      sum += t;
    }
    per.push_back(sum / sets);
  }
  for (cudaEvent_t e : ev) cudaEventDestroy(e);
  return median(per);
}

}  // namespace deltafin::cuda::bench
