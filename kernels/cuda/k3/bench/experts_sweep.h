#pragma once
// deltafin-cuda-k3-bench experts-sweep (experts_sweep.cu): the lab's fp64 routed-expert variants against
// k3::routed_experts.
#include <string>

namespace deltafin::cuda::bench {

struct ExpertsSweepOptions {
  std::string json_path = "cuda-k3-experts-sweep.json";
  std::string variants;  // names to run, e.g. "u4d4a1w4b4s0x0c0g4f4n256p0h1,..." (empty: all)
  std::string skip;      // names not to run (a variant that faulted in an earlier run)
  bool quick = false;    // a subset of the variants, uniform routings only, fewer repetitions (~30 s)
  bool graph = true;     // time calls captured in a CUDA graph (false: stream launches)
};

// Prints the device, the copy rate, each variant's checks and times as it goes, then a table and the
// best variant per routing and T; writes JSON. Returns 0, or 1 when any variant failed a check.
int experts_sweep(const ExpertsSweepOptions& opt);

}  // namespace deltafin::cuda::bench
