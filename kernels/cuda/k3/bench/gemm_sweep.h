#pragma once
// deltafin-cuda-k3-bench gemm-sweep (gemm_sweep.cu): the lab's fp64 GEMV variants against k3::gemm.
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin::cuda::bench {

struct GemmSweepOptions {
  std::string json_path = "cuda-k3-gemm-sweep.json";
  std::vector<int64_t> shapes;  // output rows to run (empty: all of K3's five)
  std::string variants;         // names to run, e.g. "s8r1m4d1x0a1k1p0,s16r1m1d4x0a1k2p0" (empty: all)
  bool graph = true;            // time calls captured in a CUDA graph (false: stream launches)
};

// Prints the checks, the tables and the best variant per shape and T; writes JSON. Returns 0, or 1 when
// any variant failed its check.
int gemm_sweep(const GemmSweepOptions& opt);

}  // namespace deltafin::cuda::bench
