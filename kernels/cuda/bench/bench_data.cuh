// deltafin-cuda-bench and deltafin-cuda-k3-bench: random weights on the device (values never matter to
// a timing, only that they are finite), a timer of back-to-back calls, and the table and JSON both
// print. Included by one source file of each program.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cuda/bench/bench_timing.h"
#include "cuda/cuda_common.cuh"

namespace deltafin::cuda::bench {

static __global__ void fill_random(uint64_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    p[i] = z ^ (z >> 31);
  }
}

// E8M0 scales near 2^-5..2^1 so the random MLP stays finite (timing does not depend on values).
static __global__ void fix_scales(uint8_t* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint8_t>(122 + p[i] % 7);
}

// bf16 weights: keep sign and mantissa bits, force a moderate exponent (no NaN or Inf).
static __global__ void fix_bf16(uint16_t* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint16_t>((p[i] & 0x807f) | (0x3c00 + ((p[i] >> 7) & 0x7f)));
}

inline void randomize(void* p, size_t bytes, uint64_t seed) {
  fill_random<<<1024, 256>>>(static_cast<uint64_t*>(p), bytes / 8, seed);
  DELTAFIN_CUDA_LAUNCHED("fill_random");
}

struct Timer {
  cudaEvent_t a, b;
  Timer() {
    DELTAFIN_CUDA_CHECK(cudaEventCreate(&a));
    DELTAFIN_CUDA_CHECK(cudaEventCreate(&b));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  // Mean time per call of `calls` back-to-back calls f(i) (queued without host waits, so host-side
  // preparation overlaps the previous call's device work, as in an engine), median of `batches`.
  template <class F>
  float per_call_ms(int calls, int batches, F&& f) {
    f(0);  // warm-up: module load, first-touch, occupancy queries
    f(1);
    DELTAFIN_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> per;
    int i = 0;
    for (int b_ = 0; b_ < batches; ++b_) {
      DELTAFIN_CUDA_CHECK(cudaEventRecord(a));
      for (int c = 0; c < calls; ++c) f(i++);
      DELTAFIN_CUDA_CHECK(cudaEventRecord(b));
      DELTAFIN_CUDA_CHECK(cudaEventSynchronize(b));
      float t = 0;
      DELTAFIN_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
      per.push_back(t / calls);
    }
    return median(per);
  }
};

// `bytes` of random BF16 weights (finite, moderate exponents) at p.
inline void random_bf16(void* p, size_t bytes, uint64_t seed) {
  randomize(p, bytes, seed);
  fix_bf16<<<1024, 256>>>(static_cast<uint16_t*>(p), bytes / 2);
  DELTAFIN_CUDA_LAUNCHED("fix_bf16");
}

// n random MXFP4 experts of K3's layout in `w` (allocated here): per expert w1 (gate), w2 (down),
// w3 (up), each packed codes then scales, the shard's order; scales near 2^-5..2^1.
inline std::vector<MxExpert> random_experts(DeviceBuffer& w, int n, int latent, int inter) {
  const size_t packed = size_t(inter) * latent / 2, scales = size_t(inter) * latent / 32;
  const size_t per = 3 * (packed + scales);
  w = DeviceBuffer(per * n);
  randomize(w.data(), per * n, 2);
  std::vector<MxExpert> all(n);
  for (int e = 0; e < n; ++e) {
    char* base = w.as<char>() + per * e;
    const size_t offs[6] = {
        0, packed, packed + scales, 2 * packed + scales, 2 * packed + 2 * scales, 3 * packed + 2 * scales};
    for (int k : {1, 3, 5}) fix_scales<<<64, 256>>>(reinterpret_cast<uint8_t*>(base + offs[k]), scales);
    all[e] = MxExpert{base + offs[0], base + offs[1], base + offs[4], base + offs[5], base + offs[2], base + offs[3]};
  }
  DELTAFIN_CUDA_LAUNCHED("fix_scales");
  return all;
}

// One measured row: bytes moved, the median time, the rate and its share of the device-to-device
// copy rate measured in the same run.
struct Row {
  std::string what, shape;
  double bytes = 0, ms = 0, gbs = 0, pct_d2d = 0;
  std::string note;
};

// The yardstick every row is reported against: a 2 GiB device-to-device copy, bytes = read + write.
// Adds its row and returns the rate in GB/s.
inline double measure_d2d(Timer& timer, std::vector<Row>& rows) {
  const size_t n = size_t(2) << 30;
  DeviceBuffer a(n), b(n);
  randomize(a.data(), n, 1);
  const float ms = timer.per_call_ms(
      10, 5, [&](int) { DELTAFIN_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), n, cudaMemcpyDeviceToDevice)); });
  const double gbs = 2.0 * n / (ms * 1e-3) / 1e9;
  rows.push_back({"cudaMemcpy D2D", "2 GiB", 2.0 * n, ms, gbs, 100.0, "bytes = read + write"});
  return gbs;
}

// The rows as a table on stdout (columns what_w and shape_w wide) and as JSON at json_path.
inline void report(const std::vector<Row>& rows, const DeviceInfo& dev, double d2d_gbs, const std::string& json_path,
                   int what_w, int shape_w) {
  std::printf("\n%-*s %-*s %12s %10s %10s %8s\n", what_w, "kernel", shape_w, "shape", "MB", "ms (med)", "GB/s",
              "% D2D");
  for (const Row& r : rows)
    std::printf("%-*s %-*s %12.1f %10.4f %10.1f %7.1f%%\n", what_w, r.what.c_str(), shape_w, r.shape.c_str(),
                r.bytes / 1e6, r.ms, r.gbs, r.pct_d2d);
  std::ofstream js(json_path);
  js << "{\n  \"device\": \"" << dev.name << "\",\n  \"sm\": \"" << dev.cc_major << dev.cc_minor
     << "\",\n  \"sms\": " << dev.sm_count << ",\n  \"d2d_gbs\": " << d2d_gbs << ",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    js << "    {\"kernel\": \"" << r.what << "\", \"shape\": \"" << r.shape << "\", \"bytes\": " << r.bytes
       << ", \"median_ms\": " << r.ms << ", \"gbs\": " << r.gbs << ", \"pct_of_d2d\": " << r.pct_d2d << ", \"note\": \""
       << r.note << "\"}" << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  js << "  ]\n}\n";
  std::printf("\nJSON written to %s\n", json_path.c_str());
}

}  // namespace deltafin::cuda::bench
