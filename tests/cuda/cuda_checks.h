#pragma once
// Comparisons of every CUDA kernel with the CPU reference on fresh random inputs, and bit-exact
// batch-invariance checks (row p alone vs inside T = 2, 4, 8 passes). No Qt here: the Qt test and
// the standalone deltafin-cuda-check (for GPU machines without Qt) both run these.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace deltafin::cuda::check {

struct Result {
  std::string name;
  bool ok = false;
  std::string detail;  // measured errors and bounds, or what differed
};

// n random BF16 values (normal, standard deviation sd) as bit patterns.
std::vector<uint16_t> rand_bf16(std::mt19937_64& rng, size_t n, float sd);

std::vector<Result> bf16_gemm(uint64_t seed);
std::vector<Result> rmsnorm(uint64_t seed);
std::vector<Result> situ(uint64_t seed);
std::vector<Result> router_topk(uint64_t seed);
// Small shapes, every kernel variant; with k3_shapes also K3's 3584/3072 experts (slower reference).
std::vector<Result> expert_mlp(uint64_t seed, bool k3_shapes);

}  // namespace deltafin::cuda::check
