// deltafin-cuda-bench: device-to-device copy bandwidth, the MXFP4 routed-expert MLP at K3's real
// shapes, and every BF16 GEMM version at K3's spine, lm_head and narrow shapes for T = 1, 2, 4, 8.
// Prints a table and writes JSON.
// A benchmark program, not a test: nothing here asserts a timing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_common.cuh"
#include "cuda/lab/bf16_gemm_lab.h"
#include "cuda/lab/expert_kernels_lab.h"
#include "expert_routings.h"
#include "bench_data.cuh"
#include "bench_timing.h"
#include "expert_trace.h"
#include "stream_patterns.h"

using namespace deltafin::cuda;
using namespace deltafin::cuda::bench;

namespace {

// The weight bytes of one call's distinct experts, read once with nothing computed: the most one
// launch can stream from them (the yardstick for the expert kernels' tail and start costs).
constexpr int kMaxSegs = 6 * 128;  // 12 KB of kernel parameters (allowed from CUDA 12.1 on Volta and newer)
struct Segments {
  const uint4* p[kMaxSegs];
  unsigned long long end[kMaxSegs];  // running sum of 16-byte words up to and including segment i
  int n;
};
__global__ void __launch_bounds__(256) read_segments(const Segments S, unsigned* sink) {
  constexpr int U = 8;  // loads in flight per thread
  const unsigned long long total = S.end[S.n - 1], stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  int cur = 0;
  for (unsigned long long base = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; base < total;
       base += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const unsigned long long i = base + u * stride;
      v[u] = make_uint4(0u, 0u, 0u, 0u);
      if (i < total) {
        while (i >= S.end[cur]) ++cur;
        const unsigned long long first = cur ? S.end[cur - 1] : 0ull;
        v[u] = __ldcs(S.p[cur] + (i - first));
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9E3779B9u) sink[0] = acc;  // keeps the loads; practically never written
}

// Mean time of read_segments over each set's experts (all six tensors of each, `packed` and
// `scales` bytes), median of 5 batches, events around each launch.
float read_only_ms(const Routings& r, size_t packed, size_t scales, int sms) {
  std::vector<Segments> segs(r.tables.size());
  for (size_t s = 0; s < r.tables.size(); ++s) {
    Segments& S = segs[s];
    S.n = 0;
    unsigned long long sum = 0;
    auto add = [&](const void* p, size_t bytes) {
      if (S.n == kMaxSegs)
        throw CudaError("read_only_ms: more than " + std::to_string(kMaxSegs / 6) + " experts per call");
      S.p[S.n] = static_cast<const uint4*>(p);
      sum += bytes / 16;
      S.end[S.n++] = sum;
    };
    for (const MxExpert& e : r.tables[s]) {
      add(e.gate_packed, packed);
      add(e.up_packed, packed);
      add(e.down_packed, packed);
      add(e.gate_scale, scales);
      add(e.up_scale, scales);
      add(e.down_scale, scales);
    }
  }
  DeviceBuffer sink(16);
  const float ms = events_ms(
      static_cast<int>(segs.size()), [](int) {},
      [&](int s) { read_segments<<<sms * 4, 256>>>(segs[s], sink.as<unsigned>()); });
  DELTAFIN_CUDA_LAUNCHED("read_segments");
  return ms;
}

// Mean time of the expert kernel alone over `sets` routings (ids [sets][T][K], global expert ids into
// `pool`), median of 5 batches: each call's tables are built on the device first (plan_routed),
// then events bracket run_planned's launch only.
float kernel_only_ms(ExpertMlp& mlp, const std::vector<MxExpert>& pool, const std::vector<int32_t>& ids,
                     const std::vector<float>& weights, int T, int sets, const float* dz, float* dy) {
  const int K = mlp.top_k();
  DeviceBuffer table(pool.size() * sizeof(MxExpert)), idx(ids.size() * sizeof(int32_t)),
      wt(weights.size() * sizeof(float));
  table.upload(pool.data(), table.size());
  idx.upload(ids.data(), idx.size());
  wt.upload(weights.data(), wt.size());
  return events_ms(
      sets,
      [&](int s) {
        mlp.plan_routed(table.as<MxExpert>(), static_cast<int>(pool.size()),
                        idx.as<int32_t>() + static_cast<size_t>(s) * T * K, wt.as<float>(), T);
      },
      [&](int) { mlp.run_planned(T, dz, dy); });
}

}  // namespace

// --variant "A|B|C": versions whose names contain any of the alternatives (empty: every version).
bool matches_any(const std::string& name, const std::string& alternatives) {
  size_t from = 0;
  while (true) {
    const size_t bar = alternatives.find('|', from);
    const std::string alt = alternatives.substr(from, bar == std::string::npos ? std::string::npos : bar - from);
    if (name.find(alt) != std::string::npos) return true;
    if (bar == std::string::npos) return false;
    from = bar + 1;
  }
}

int main(int argc, char** argv) {
  deltafin::cuda::register_lab_bf16_gemm_versions();  // the GEMM part measures every version
  std::string json_path = "cuda-bench.json";
  std::string only_variant;       // run only expert variants whose name contains this
  bool experts_only = false;      // skip the copy and GEMV parts (for profiling one kernel)
  bool gemm_only = false;         // skip the expert part
  std::string only_gemm_version;  // run only this BF16 GEMM version number
  std::string trace_path;         // per-task times of the traced expert versions (v122, v143, v184, v193), as CSV
  std::vector<int> only_rows;     // expert rows: run only these row counts T (profiling one launch shape)
  bool patterns = false;          // --patterns: the expert kernels' access pattern, loads only (stream_patterns)
  int top_k = 16;                 // --top-k: experts per row (K3 routes 16; fewer makes calls of fewer tasks)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--variant") && i + 1 < argc) only_variant = argv[++i];
    else if (!std::strcmp(argv[i], "--experts-only")) experts_only = true;
    else if (!std::strcmp(argv[i], "--gemm-only")) gemm_only = true;
    else if (!std::strcmp(argv[i], "--gemm-version") && i + 1 < argc) only_gemm_version = argv[++i];
    else if (!std::strcmp(argv[i], "--trace") && i + 1 < argc) trace_path = argv[++i];
    else if (!std::strcmp(argv[i], "--patterns")) patterns = true;
    else if (!std::strcmp(argv[i], "--top-k") && i + 1 < argc) {
      top_k = std::atoi(argv[++i]);
      if (top_k < 1 || top_k > 16) {
        std::fprintf(stderr, "--top-k takes 1..16 experts per row\n");
        return 3;
      }
    } else if (!std::strcmp(argv[i], "--rows") && i + 1 < argc) {
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        const long t = std::strtol(p, &end, 10);
        if (end == p || t < 1 || t > 8) {
          std::fprintf(stderr, "--rows takes row counts 1..8 separated by commas, e.g. --rows 1,8\n");
          return 3;
        }
        only_rows.push_back(static_cast<int>(t));
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--json PATH] [--variant SUBSTRING[|SUBSTRING...]] [--experts-only] [--gemm-only] "
                   "[--gemm-version N] [--trace CSV] [--patterns] [--rows T,T...] [--top-k K]\n",
                   argv[0]);
      return 3;
    }
  }
  std::string why;
  if (!device_available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 2;
  }
  try {
    const DeviceInfo dev = device_info();
    std::printf("device: %s, sm_%d%d, %d SMs, L2 %zu MiB, %zu GiB, driver %d, runtime %d\n", dev.name.c_str(),
                dev.cc_major, dev.cc_minor, dev.sm_count, dev.l2_bytes >> 20, dev.total_bytes >> 30, dev.driver_version,
                dev.runtime_version);
    Timer timer;
    std::vector<Row> rows;
    std::mt19937_64 rng(12345);

    // 1. Device-to-device copy: 2 GiB, bytes counted = read + write (2 x size). Always measured:
    // every other row is reported against it.
    const double d2d_gbs = measure_d2d(timer, rows);
    if (patterns) stream_patterns(dev.sm_count, d2d_gbs);

    // 2. MXFP4 routed experts at K3's shapes: 896 experts of 17,547,264 bytes, checkpoint layout.
    if (!gemm_only) {
      const int latent = 3584, inter = 3072, K = top_k, E = 896;
      const std::string k_note = K == 16 ? "" : ", top-" + std::to_string(K);  // the shapes' note of a non-K3 top-K
      const size_t packed = size_t(inter) * latent / 2, scales = size_t(inter) * latent / 32;
      const size_t per = 3 * (packed + scales);
      DeviceBuffer w;
      const std::vector<MxExpert> all = random_experts(w, E, latent, inter);
      std::vector<float> z(8 * latent);
      std::normal_distribution<float> nd(0.f, 1.f);
      for (float& v : z) v = nd(rng);
      DeviceBuffer dz(z.size() * 4), dy(z.size() * 4);
      dz.upload(z.data(), z.size() * 4);
      ExpertMlp mlp(latent, inter, K, 8);
      // The fragment-order versions read a repacked copy of the packed codes (scales shared).
      DeviceBuffer wf;
      std::vector<MxExpert> all_frag;
      auto make_frag = [&] {
        if (!all_frag.empty()) return;
        wf = DeviceBuffer(3 * packed * E);
        for (int e = 0; e < E; ++e) {
          char* base = wf.as<char>() + 3 * packed * e;
          const MxExpert& a = all[e];
          repack_mx_fragments(a.gate_packed, base, inter, latent);
          repack_mx_fragments(a.up_packed, base + packed, inter, latent);
          repack_mx_fragments(a.down_packed, base + 2 * packed, latent, inter);
          all_frag.push_back(MxExpert{base, a.gate_scale, base + packed, a.up_scale, base + 2 * packed, a.down_scale});
        }
        synchronize();
      };
      // Shape-major: at each row count every version runs after the same kind of work. Measured
      // version-major, a version's T=1 that followed another's T=8 runs came out ~1.3
      // points of D2D lower than the same code run after a T=1 (the GPU's state after the heavier
      // runs), which favoured whichever version the table lists first.
      std::vector<std::string> chosen;
      for (const std::string& variant : expert_versions(mlp))
        if (matches_any(variant, only_variant)) chosen.push_back(variant);
      // pool: the experts a pass draws from. All 896: nearly every expert has one row (a random
      // router). 64: a pass of 8 rows shares ~53 experts, ~2.4 rows each (like slice-2l's layers,
      // or a router whose neighbouring tokens agree), so reading an expert once for several
      // rows matters.
      for (const std::pair<int, int> tp : {std::pair{1, E}, std::pair{2, E}, std::pair{4, E}, std::pair{8, E},
                                           std::pair{2, 64}, std::pair{4, 64}, std::pair{8, 64}}) {
        const int T = tp.first, pool = tp.second;
        if (!only_rows.empty() && std::find(only_rows.begin(), only_rows.end(), T) == only_rows.end()) continue;
        // Many different routings in rotation, so no run finds its experts in the 60 MB L2; the same
        // ones for every version (a generator seeded by the shape alone), built once per layout.
        const int sets = 48;
        std::optional<Routings> by_layout[2];  // [fragment order]
        for (const std::string& variant : chosen) {
          select_expert_version(mlp, variant);
          if (mlp.fragment_layout()) make_frag();
          const std::vector<MxExpert>& pool_experts = mlp.fragment_layout() ? all_frag : all;
          std::optional<Routings>& built = by_layout[mlp.fragment_layout() ? 1 : 0];
          if (!built) {
            std::mt19937_64 rng_rt(1000003ull * static_cast<unsigned>(T) + static_cast<unsigned>(pool));
            built = make_routings(rng_rt, pool_experts, T, K, pool, sets);
          }
          const Routings& rt = *built;
          const auto& tables = rt.tables;
          const auto& slots = rt.slots;
          const auto& global_ids = rt.global_ids;
          const double distinct_sum = rt.distinct_avg * sets;
          std::vector<float> weights(size_t(T) * K, 1.0f / K);
          // Every batch of `sets` calls covers each routing once, so bytes per call = the average.
          const float ms = timer.per_call_ms(sets, 5, [&](int i) {
            const int s = i % sets;
            mlp.run(tables[s], slots[s].data(), weights.data(), T, dz.as<float>(), dy.as<float>());
          });
          const double gbs = distinct_sum / sets * per / (ms * 1e-3) / 1e9;
          char shape[160];
          std::snprintf(shape, sizeof shape, "T=%d, %.1f distinct experts avg (of %d)%s, 3584->3072->3584", T,
                        distinct_sum / sets, pool, k_note.c_str());
          rows.push_back({"MXFP4 expert MLP [" + variant + "]", shape, distinct_sum / sets * per, ms, gbs,
                          d2d_gbs > 0 ? 100.0 * gbs / d2d_gbs : 0.0,
                          "bytes = distinct experts x 17,547,264; time per layer call incl. routing-table upload"});
          // The kernel alone: the same routings with the tables built on the device (run_routed's
          // builder, which the engine runs on the router's branch beside other work), each expert
          // launch timed by its own pair of events. What the launch itself does, nothing else.
          const float kms =
              kernel_only_ms(mlp, pool_experts, global_ids, weights, T, sets, dz.as<float>(), dy.as<float>());
          const double kgbs = distinct_sum / sets * per / (kms * 1e-3) / 1e9;
          rows.push_back({"MXFP4 expert MLP [" + variant + "] kernel only", shape, distinct_sum / sets * per, kms, kgbs,
                          d2d_gbs > 0 ? 100.0 * kgbs / d2d_gbs : 0.0,
                          "bytes as above; time of the expert kernel alone (tables built on the device, events around "
                          "each launch)"});
        }
      }
      // The same bytes read by one plain launch (no tasks, no arithmetic): what a single call can
      // stream at all, so the expert rows' distance from the copy splits into launch + streaming
      // (also here) and the task scheme (the rest).
      std::mt19937_64 rng_read(777);
      for (const int T : {1, 2, 4, 8}) {
        const Routings rt = make_routings(rng_read, all, T, K, E, 48);
        const float ms = read_only_ms(rt, packed, scales, dev.sm_count);
        const double gbs = rt.distinct_avg * per / (ms * 1e-3) / 1e9;
        char shape[160];
        std::snprintf(shape, sizeof shape, "T=%d, %.1f distinct experts avg (of %d)%s, 3584->3072->3584", T,
                      rt.distinct_avg, E, k_note.c_str());
        rows.push_back({"MXFP4 expert bytes, read only (one launch)", shape, rt.distinct_avg * per, ms, gbs,
                        d2d_gbs > 0 ? 100.0 * gbs / d2d_gbs : 0.0,
                        "the same bytes as the expert rows, read once by a plain kernel; events around each launch"});
      }
      if (!trace_path.empty()) {
        make_frag();
        for (const char* traced : {"v122", "v143", "v184", "v193"})
          trace_expert_tasks(mlp, traced, all_frag, K, trace_path + "." + traced);
      }
    }

    // 3. BF16 GEMV / small-T GEMM, every numbered version, at the spine's 7168x7168, lm_head's
    // 163840x7168 and narrow K3 shapes (router 896x7168, q_a 1536x7168, latent_down 3584x7168).
    struct GemmShape {
      int64_t out;
      int copies;  // rotate copies of a small matrix so no call finds its weights in the 60 MB L2
    };
    for (const GemmShape gs :
         {GemmShape{7168, 12}, GemmShape{163840, 1}, GemmShape{896, 12}, GemmShape{1536, 8}, GemmShape{3584, 4}}) {
      if (experts_only) break;
      const int64_t out = gs.out, in = 7168;
      const int copies = gs.copies;
      const size_t wbytes = size_t(out) * in * 2;
      DeviceBuffer w(wbytes * copies);
      random_bf16(w.data(), wbytes * copies, 3);
      DeviceBuffer x(8 * in * 4), y(8 * size_t(out) * 4);
      std::vector<float> xs(8 * in);
      std::normal_distribution<float> nd(0.f, 1.f);
      for (float& v : xs) v = nd(rng);
      x.upload(xs.data(), xs.size() * 4);
      const int dv = bf16_gemm_default_version(out, in);
      for (const int version : bf16_gemm_versions()) {
        if (!only_gemm_version.empty() && std::to_string(version) != only_gemm_version) continue;
        for (int T : {1, 2, 4, 8}) {
          float ms = 0;
          try {
            ms = timer.per_call_ms(copies > 1 ? 4 * copies : 10, 5, [&](int i) {
              bf16_gemm_version(version, w.as<char>() + wbytes * (i % copies), out, in, x.as<float>(), in, T,
                                y.as<float>(), out);
            });
          } catch (const CudaError& e) {
            std::printf("v%d %lldx%lld T=%d: %s\n", version, static_cast<long long>(out), static_cast<long long>(in), T,
                        e.what());
            continue;
          }
          const double gbs = wbytes / (ms * 1e-3) / 1e9;
          rows.push_back({"BF16 GEMM [v" + std::to_string(version) + (version == dv ? ", default]" : "]"),
                          std::to_string(out) + "x" + std::to_string(in) + ", T=" + std::to_string(T),
                          static_cast<double>(wbytes), ms, gbs, d2d_gbs > 0 ? 100.0 * gbs / d2d_gbs : 0.0,
                          "bytes = weight bytes; " + bf16_gemm_version_name(version)});
        }
      }
    }
    synchronize();

    report(rows, dev, d2d_gbs, json_path, 44, 48);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
}
