// deltafin-cuda-k3-bench: the K3 forward's fp64 kernels (kernels/cuda/k3) against the device-to-device
// copy rate: the GEMV at K3's spine, lm_head and narrow shapes for T = 1..16 and the routed experts
// at K3's shapes (896 experts, row layout, random routings so that no call finds its experts in L2).
// Prints a table and writes JSON. A benchmark program, not a test: nothing here asserts a timing.
//   deltafin-cuda-k3-bench [--json PATH] [--top-k K]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cuda/bench/bench_timing.h"
#include "cuda/bench/expert_routings.h"
#include "cuda/cuda_common.cuh"
#include "cuda/k3/k3_ops.h"

using namespace deltafin::cuda;
using namespace deltafin::cuda::bench;

namespace {

__global__ void fill_random(uint64_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    p[i] = z ^ (z >> 31);
  }
}
// E8M0 scales near 2^-5..2^1 (timing does not depend on values).
__global__ void fix_scales(uint8_t* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint8_t>(122 + p[i] % 7);
}
// bf16 weights: keep sign and mantissa bits, force a moderate exponent (no NaN or Inf).
__global__ void fix_bf16(uint16_t* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint16_t>((p[i] & 0x807f) | (0x3c00 + ((p[i] >> 7) & 0x7f)));
}
void randomize(void* p, size_t bytes, uint64_t seed) {
  fill_random<<<1024, 256>>>(static_cast<uint64_t*>(p), bytes / 8, seed);
  DELTAFIN_CUDA_LAUNCHED("fill_random");
}

// Mean time per call of `calls` back-to-back calls f(i), median of `batches`.
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
  template <class F>
  float per_call_ms(int calls, int batches, F&& f) {
    f(0);
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

struct Row {
  std::string what, shape;
  double bytes, ms, gbs, pct_d2d;
  std::string note;
};
struct GemmShape {
  int64_t out;
  int copies;  // rotate copies of a small matrix so no call finds its weights in L2
};

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "cuda-k3-bench.json";
  int top_k = 16;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--top-k") && i + 1 < argc) top_k = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--top-k K]\n", argv[0]);
      return 3;
    }
  }
  if (top_k < 1 || top_k > 16) {
    std::fprintf(stderr, "--top-k takes 1..16 experts per row\n");
    return 3;
  }
  std::string why;
  if (!device_available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 2;
  }
  try {
    const DeviceInfo dev = device_info();
    std::printf("device: %s, sm_%d%d, %d SMs, L2 %zu MiB\n", dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count,
                dev.l2_bytes >> 20);
    Timer timer;
    std::vector<Row> rows;
    std::mt19937_64 rng(12345);
    double d2d_gbs = 0;
    {  // the yardstick: a 2 GiB device-to-device copy, bytes = read + write
      const size_t n = size_t(2) << 30;
      DeviceBuffer a(n), b(n);
      randomize(a.data(), n, 1);
      const float ms = timer.per_call_ms(
          10, 5, [&](int) { DELTAFIN_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), n, cudaMemcpyDeviceToDevice)); });
      d2d_gbs = 2.0 * n / (ms * 1e-3) / 1e9;
      rows.push_back({"cudaMemcpy D2D", "2 GiB", 2.0 * n, ms, d2d_gbs, 100.0, "bytes = read + write"});
    }
    for (const GemmShape gs :
         {GemmShape{7168, 12}, GemmShape{163840, 1}, GemmShape{896, 12}, GemmShape{1536, 8}, GemmShape{3584, 4}}) {
      const int64_t out = gs.out, in = 7168;
      const int copies = gs.copies;
      const size_t wbytes = size_t(out) * in * 2;
      DeviceBuffer w(wbytes * copies);
      randomize(w.data(), wbytes * copies, 3);
      fix_bf16<<<1024, 256>>>(w.as<uint16_t>(), wbytes * copies / 2);
      DELTAFIN_CUDA_LAUNCHED("fix_bf16");
      std::vector<double> xs(16 * in);
      std::normal_distribution<double> nd(0.0, 1.0);
      for (double& v : xs) v = nd(rng);
      DeviceBuffer x(xs.size() * 8), y(16 * size_t(out) * 8);
      x.upload(xs.data(), xs.size() * 8);
      for (int T : {1, 2, 4, 8, 16}) {
        const float ms = timer.per_call_ms(copies > 1 ? 4 * copies : 10, 5, [&](int i) {
          const k3::DevMat m{w.as<char>() + wbytes * (i % copies), true, out, in};
          k3::gemm(m, x.as<double>(), in, T, y.as<double>(), out, nullptr);
        });
        const double gbs = wbytes / (ms * 1e-3) / 1e9;
        rows.push_back({"fp64 GEMV k3::gemm (forward)",
                        std::to_string(out) + "x" + std::to_string(in) + ", T=" + std::to_string(T),
                        static_cast<double>(wbytes), ms, gbs, d2d_gbs > 0 ? 100.0 * gbs / d2d_gbs : 0.0,
                        "bytes = weight bytes; fp64 activations"});
      }
    }
    const int latent = 3584, inter = 3072, K = top_k, E = 896;
    const size_t packed = size_t(inter) * latent / 2, scales = size_t(inter) * latent / 32;
    const size_t per = 3 * (packed + scales);
    DeviceBuffer w(per * E);
    randomize(w.data(), per * E, 2);
    std::vector<MxExpert> all(E);
    for (int e = 0; e < E; ++e) {
      char* base = w.as<char>() + per * e;
      const size_t offs[6] = {
          0, packed, packed + scales, 2 * packed + scales, 2 * packed + 2 * scales, 3 * packed + 2 * scales};
      for (int k : {1, 3, 5}) fix_scales<<<64, 256>>>(reinterpret_cast<uint8_t*>(base + offs[k]), scales);
      all[e] = MxExpert{base + offs[0], base + offs[1], base + offs[4], base + offs[5], base + offs[2], base + offs[3]};
    }
    DELTAFIN_CUDA_LAUNCHED("fix_scales");
    DeviceBuffer table(all.size() * sizeof(MxExpert));
    table.upload(all.data(), table.size());
    std::vector<double> z(16 * latent);
    std::normal_distribution<double> nd(0.0, 1.0);
    for (double& v : z) v = nd(rng);
    DeviceBuffer dz(z.size() * 8), dy(z.size() * 8),
        scratch(size_t(k3::routed_experts_scratch(16, K, latent, inter)) * 8);
    dz.upload(z.data(), z.size() * 8);
    std::mt19937_64 rng_rt(4242);
    for (const int T : {1, 2, 4, 8, 16}) {
      const int sets = 48;
      const Routings rt = make_routings(rng_rt, all, T, K, E, sets);
      DeviceBuffer ids(rt.global_ids.size() * 4), wt(size_t(T) * K * 8);
      ids.upload(rt.global_ids.data(), ids.size());
      const std::vector<double> weights(size_t(T) * K, 1.0 / K);
      wt.upload(weights.data(), wt.size());
      const float ms = timer.per_call_ms(sets, 5, [&](int i) {
        k3::routed_experts(table.as<MxExpert>(), ids.as<int32_t>() + size_t(i % sets) * T * K, wt.as<double>(), T, K,
                           latent, inter, dz.as<double>(), scratch.as<double>(), dy.as<double>(), nullptr);
      });
      const double gbs = rt.distinct_avg * per / (ms * 1e-3) / 1e9;
      char shape[160];
      std::snprintf(shape, sizeof shape, "T=%d, %.1f distinct experts avg (of %d), 3584->3072->3584", T,
                    rt.distinct_avg, E);
      rows.push_back({"fp64 routed experts k3::routed_experts (forward)", shape, rt.distinct_avg * per, ms, gbs,
                      d2d_gbs > 0 ? 100.0 * gbs / d2d_gbs : 0.0,
                      "bytes = distinct experts x 17,547,264; row layout, fp64 activations"});
    }
    synchronize();

    std::printf("\n%-50s %-50s %10s %10s %10s %8s\n", "kernel", "shape", "MB", "ms (med)", "GB/s", "% D2D");
    for (const Row& r : rows)
      std::printf("%-50s %-50s %10.1f %10.4f %10.1f %7.1f%%\n", r.what.c_str(), r.shape.c_str(), r.bytes / 1e6, r.ms,
                  r.gbs, r.pct_d2d);
    std::ofstream js(json_path);
    js << "{\n  \"device\": \"" << dev.name << "\",\n  \"d2d_gbs\": " << d2d_gbs << ",\n  \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      js << "    {\"kernel\": \"" << r.what << "\", \"shape\": \"" << r.shape << "\", \"bytes\": " << r.bytes
         << ", \"median_ms\": " << r.ms << ", \"gbs\": " << r.gbs << ", \"pct_of_d2d\": " << r.pct_d2d
         << ", \"note\": \"" << r.note << "\"}" << (i + 1 < rows.size() ? ",\n" : "\n");
    }
    js << "  ]\n}\n";
    std::printf("\nJSON written to %s\n", json_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
}
