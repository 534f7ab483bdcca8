// Random expert routings for the expert benchmarks (deltafin-cuda-bench).
#pragma once

#include <random>
#include <vector>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda::bench {

// One routing per set: T rows of K distinct experts drawn from `pool` of the E experts; tables[s]
// lists each set's distinct experts (from `experts`), slots[s] the table index per (row, slot),
// global_ids the expert ids ([sets][T][K]).
struct Routings {
  std::vector<std::vector<MxExpert>> tables;
  std::vector<std::vector<int32_t>> slots;
  std::vector<int32_t> global_ids;
  double distinct_avg = 0;
};
inline Routings make_routings(std::mt19937_64& rng, const std::vector<MxExpert>& experts, int T, int K, int pool,
                              int sets) {
  const int E = static_cast<int>(experts.size());
  Routings r;
  r.tables.resize(sets);
  r.slots.resize(sets);
  double distinct_sum = 0;
  for (int s = 0; s < sets; ++s) {
    std::vector<int> local(E, -1);
    std::vector<int> ids(E);
    for (int e = 0; e < E; ++e) ids[e] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    const std::vector<int> drawn(ids.begin(), ids.begin() + pool);  // this routing's pool
    for (int t = 0; t < T; ++t) {
      ids.assign(drawn.begin(), drawn.end());
      std::shuffle(ids.begin(), ids.end(), rng);  // K distinct experts per row from the pool
      for (int j = 0; j < K; ++j) {
        const int e = ids[j];
        if (local[e] < 0) {
          local[e] = static_cast<int>(r.tables[s].size());
          r.tables[s].push_back(experts[e]);
        }
        r.slots[s].push_back(local[e]);
        r.global_ids.push_back(e);
      }
    }
    distinct_sum += static_cast<double>(r.tables[s].size());
  }
  r.distinct_avg = distinct_sum / sets;
  return r;
}

}  // namespace deltafin::cuda::bench
