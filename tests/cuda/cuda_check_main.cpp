// deltafin-cuda-check: runs every CUDA kernel check without Qt, printed as one table (op, shape,
// max abs / rel error against the CPU reference, PASS/FAIL), (for GPU machines that only have
// the CUDA toolkit) and exits non-zero when any fails. Exit codes: 0 all passed, 1 a check failed,
// 2 no usable GPU, 3 bad arguments or an error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "cuda_checks.h"

int main(int argc, char** argv) {
  uint64_t seed = std::random_device{}();
  bool k3 = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--quick")) k3 = false;
    else {
      std::fprintf(stderr, "usage: %s [--seed N] [--quick]   (--quick skips the K3-shape expert check)\n", argv[0]);
      return 3;
    }
  }
  std::string why;
  if (!deltafin::cuda::device_available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 2;
  }
  try {
    const auto dev = deltafin::cuda::device_info();
    std::printf("device: %s (sm_%d%d, %d SMs), seed %llu\n", dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count,
                static_cast<unsigned long long>(seed));
    // One table of every GPU op against its CPU reference (and the bit-for-bit and batch-invariance
    // checks beside them).
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<deltafin::cuda::check::Result> all;
    for (auto&& part : {deltafin::cuda::check::bf16_gemm(seed), deltafin::cuda::check::rmsnorm(seed),
                        deltafin::cuda::check::k3_ops(seed), deltafin::cuda::check::expert_mlp(seed, k3)})
      all.insert(all.end(), part.begin(), part.end());
    const int failed = deltafin::cuda::check::print_table(all);
    const int total = static_cast<int>(all.size());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%d of %d checks passed (%.1f s, seed %llu)\n", total - failed, total, s,
                static_cast<unsigned long long>(seed));
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
}
