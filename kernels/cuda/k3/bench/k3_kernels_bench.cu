// deltafin-cuda-k3-bench: the K3 forward's fp64 kernels (kernels/cuda/k3) against the device-to-device
// copy rate: the GEMV at K3's spine, lm_head and narrow shapes for T = 1..16 and the routed experts
// at K3's shapes (896 experts, row layout, random routings so that no call finds its experts in L2).
// Prints a table and writes JSON. A benchmark program, not a test: nothing here asserts a timing.
//   deltafin-cuda-k3-bench [--json PATH] [--top-k K]
//   deltafin-cuda-k3-bench gemm-sweep [--json PATH] [--shapes 7168,896,...] [--variants NAME,...] [--stream]
//     the lab's GEMV variants against k3::gemm at K3's BF16 shapes (gemm_sweep.cu)
//   deltafin-cuda-k3-bench experts-sweep [--quick] [--json PATH] [--variants NAME,...] [--skip NAME,...] [--stream]
//     the lab's routed-expert variants against k3::routed_experts at K3's shapes (experts_sweep.cu)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/bench/bench_data.cuh"
#include "cuda/bench/bench_timing.h"
#include "cuda/bench/expert_routings.h"
#include "cuda/cuda_common.cuh"
#if DELTAFIN_GEMM_SWEEP
#include "cuda/k3/bench/experts_sweep.h"
#include "cuda/k3/bench/gemm_sweep.h"
#include "cuda/k3/bench/sweep_support.h"
#endif
#include "cuda/k3/k3_ops.h"

using namespace deltafin::cuda;
using namespace deltafin::cuda::bench;

namespace {

struct GemmShape {
  int64_t out;
  int copies;  // rotate copies of a small matrix so no call finds its weights in L2
};

}  // namespace

namespace {

int sweep_main(int argc, char** argv) {
#if !DELTAFIN_GEMM_SWEEP
  std::fprintf(stderr,
               "%s: built without the GEMV sweep (configure with -DDELTAFIN_GEMM_SWEEP=ON, as "
               "tools/bench/cuda-build.sh does)\n",
               argv[0]);
  return 3;
#else
  GemmSweepOptions opt;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) opt.json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--variants") && i + 1 < argc) opt.variants = argv[++i];
    else if (!std::strcmp(argv[i], "--stream")) opt.graph = false;
    else if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc) {
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        opt.shapes.push_back(std::strtoll(p, &end, 10));
        p = *end ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s gemm-sweep [--json PATH] [--shapes 7168,896,...] [--variants NAME,...] [--stream]\n",
                   argv[0]);
      return 3;
    }
  }
  return run_sweep_on_device([&] { return gemm_sweep(opt); });
#endif
}

int experts_sweep_main(int argc, char** argv) {
#if !DELTAFIN_GEMM_SWEEP
  std::fprintf(stderr,
               "%s: built without the sweeps (configure with -DDELTAFIN_GEMM_SWEEP=ON, as "
               "tools/bench/cuda-build.sh does)\n",
               argv[0]);
  return 3;
#else
  ExpertsSweepOptions opt;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) opt.json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--variants") && i + 1 < argc) opt.variants = argv[++i];
    else if (!std::strcmp(argv[i], "--skip") && i + 1 < argc) opt.skip = argv[++i];
    else if (!std::strcmp(argv[i], "--quick")) opt.quick = true;
    else if (!std::strcmp(argv[i], "--stream")) opt.graph = false;
    else {
      std::fprintf(stderr,
                   "usage: %s experts-sweep [--quick] [--json PATH] [--variants NAME,...] [--skip NAME,...] "
                   "[--stream]\n",
                   argv[0]);
      return 3;
    }
  }
  return run_sweep_on_device([&] { return experts_sweep(opt); });
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "gemm-sweep")) return sweep_main(argc, argv);
  if (argc > 1 && !std::strcmp(argv[1], "experts-sweep")) return experts_sweep_main(argc, argv);
  std::string json_path = "cuda-k3-bench.json";
  int top_k = 16;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--top-k") && i + 1 < argc) top_k = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--json PATH] [--top-k K] | gemm-sweep ... | experts-sweep ...\n", argv[0]);
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
    const double d2d_gbs = measure_d2d(timer, rows);
    for (const GemmShape gs :
         {GemmShape{7168, 12}, GemmShape{163840, 1}, GemmShape{896, 12}, GemmShape{1536, 8}, GemmShape{3584, 4}}) {
      const int64_t out = gs.out, in = 7168;
      const int copies = gs.copies;
      const size_t wbytes = size_t(out) * in * 2;
      DeviceBuffer w(wbytes * copies);
      random_bf16(w.data(), wbytes * copies, 3);
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
    const size_t per = 3 * (size_t(inter) * latent / 2 + size_t(inter) * latent / 32);  // one expert's bytes
    DeviceBuffer w;
    const std::vector<MxExpert> all = random_experts(w, E, latent, inter);
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

    report(rows, dev, d2d_gbs, json_path, 50, 50);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
}
