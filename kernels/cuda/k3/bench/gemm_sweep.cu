// deltafin-cuda-k3-bench gemm-sweep: every variant of the lab's fp64 GEMV (kernels/cuda/lab/gemm64_lab.h)
// and the product's k3::gemm at K3's BF16 shapes (out x 7168) for T = 1, 2, 4, 8, 16, against the
// device-to-device copy rate, so that the product's block shape can be chosen per shape from data.
// Each variant is checked first: every output within 1e-13 of the product's (relative to the larger of
// |product| and 1 % of its row's RMS, so that an output that cancels to nearly zero is judged at its
// row's scale), and every row of every T's result bit for bit equal to that row computed alone (batch
// invariance); a variant that fails either prints FAIL and is not timed. Timing: `calls` back-to-back
// calls captured in one CUDA graph (as the forward runs them, PDL edges included), weights rotated over
// enough copies that no call finds its matrix in L2, median of 5 launches of the graph after one
// untimed; --stream times launches on a stream instead. Prints a table per shape and the best variant
// per (shape, T); writes JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/bench/bench_data.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/k3/bench/call_timer.cuh"
#include "cuda/k3/bench/sweep_support.h"
#include "cuda/k3/bench/gemm_sweep.h"
#include "cuda/k3/k3_ops.h"
#include "cuda/lab/gemm64_lab.h"

namespace deltafin::cuda::bench {
namespace {

struct Shape {
  int64_t out;
  int copies;  // rotate copies of a small matrix so no call finds its weights in L2
};

constexpr int kTs[] = {1, 2, 4, 8, 16};
constexpr int kMaxT = 16;
constexpr int64_t kIn = 7168;

struct Result {
  int64_t out;
  int T;
  std::string variant;
  double ms, gbs, pct;
};

std::vector<double> download(const DeviceBuffer& b, size_t n) {
  std::vector<double> v(n);
  b.download(v.data(), n * sizeof(double));
  return v;
}

}  // namespace

int gemm_sweep(const GemmSweepOptions& opt) {
  const DeviceInfo dev = device_info();
  std::printf("device: %s, sm_%d%d, %d SMs, L2 %zu MiB\n", dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count,
              dev.l2_bytes >> 20);
  Timer timer;
  std::vector<Row> d2d_rows;
  const double d2d_gbs = measure_d2d(timer, d2d_rows);
  std::printf("cudaMemcpy D2D: %.1f GB/s (read + write)\n", d2d_gbs);
  CallTimer ct(opt.graph);

  const int nv = lab::gemm64_lab_count();
  std::vector<int> variants;
  for (int v = 0; v < nv; ++v) {
    const std::string name = lab::gemm64_lab_name(v);
    if (opt.variants.empty() || opt.variants.find(name) != std::string::npos) variants.push_back(v);
  }
  std::vector<Shape> shapes;
  for (const Shape s : {Shape{7168, 12}, Shape{163840, 1}, Shape{3584, 4}, Shape{1536, 8}, Shape{896, 12}})
    if (opt.shapes.empty() || std::find(opt.shapes.begin(), opt.shapes.end(), s.out) != opt.shapes.end())
      shapes.push_back(s);

  std::vector<Result> results;
  std::vector<std::string> fails;
  std::ostringstream checks;  // JSON of every variant's check per shape
  std::mt19937_64 rng(12345);
  std::vector<double> xs(size_t(kMaxT) * kIn);
  std::normal_distribution<double> nd(0.0, 1.0);
  for (double& v : xs) v = nd(rng);
  DeviceBuffer x(xs.size() * sizeof(double));
  x.upload(xs.data(), x.size());

  for (const Shape& sh : shapes) {
    const int64_t out = sh.out, in = kIn;
    const size_t wbytes = size_t(out) * in * 2;
    DeviceBuffer w(wbytes * sh.copies);
    random_bf16(w.data(), wbytes * sh.copies, 3);
    const size_t ny = size_t(kMaxT) * out;
    DeviceBuffer y(ny * sizeof(double)), ys(ny * sizeof(double));
    int64_t scratch_n = 0, counters_n = 1;
    for (int v : variants) {
      scratch_n = std::max(scratch_n, lab::gemm64_lab_scratch(v, out, kMaxT));
      counters_n = std::max(counters_n, lab::gemm64_lab_counters(v, out));
    }
    DeviceBuffer scratch(std::max<int64_t>(scratch_n, 1) * sizeof(double)), counters(counters_n * sizeof(unsigned));
    counters.fill_byte(0);
    synchronize();  // the fills ran on the legacy stream; the calls below run on a non-blocking one
    auto wcopy = [&](int i) { return reinterpret_cast<const uint16_t*>(w.as<char>() + wbytes * (i % sh.copies)); };
    const int calls = sh.copies > 1 ? 4 * sh.copies : 10;
    char shape_name[48];
    std::snprintf(shape_name, sizeof shape_name, "%lldx%lld", static_cast<long long>(out), static_cast<long long>(in));

    // The product's result at T = 16 (copy 0): the reference of every variant's check.
    k3::gemm(k3::DevMat{wcopy(0), true, out, in}, x.as<double>(), in, kMaxT, y.as<double>(), out, ct.stream());
    DELTAFIN_CUDA_CHECK(cudaStreamSynchronize(ct.stream()));
    const std::vector<double> ref = download(y, ny);
    std::vector<double> floor_(kMaxT);  // 1 % of each row's RMS
    for (int t = 0; t < kMaxT; ++t) {
      double ss = 0;
      for (int64_t o = 0; o < out; ++o) ss += ref[size_t(t) * out + o] * ref[size_t(t) * out + o];
      floor_[t] = 0.01 * std::sqrt(ss / double(out));
    }

    for (int T : kTs) {
      const float ms = ct.per_call_ms(calls, [&](int i, cudaStream_t s) {
        k3::gemm(k3::DevMat{wcopy(i), true, out, in}, x.as<double>(), in, T, y.as<double>(), out, s);
      });
      const double gbs = wbytes / (ms * 1e-3) / 1e9;
      results.push_back({out, T, "product", ms, gbs, 100.0 * gbs / d2d_gbs});
    }
    std::fprintf(stderr, "[%s] product: %.1f%% of copy at T=1\n", shape_name, results[results.size() - 5].pct);

    for (int v : variants) {
      const std::string name = lab::gemm64_lab_name(v);
      auto call = [&](int i, int T, const double* xp, double* yp, cudaStream_t s) {
        lab::gemm64_lab(v, wcopy(i), out, in, xp, in, T, yp, out, scratch.as<double>(), counters.as<unsigned>(), s);
      };
      // Check: each row alone against the product, then every T's rows against those bit for bit.
      std::string why;
      double max_rel = 0;
      bool bitwise_product = true;
      try {
        for (int t = 0; t < kMaxT; ++t)
          call(0, 1, x.as<double>() + size_t(t) * in, ys.as<double>() + size_t(t) * out, ct.stream());
        DELTAFIN_CUDA_CHECK(cudaStreamSynchronize(ct.stream()));
        const std::vector<double> single = download(ys, ny);
        for (int t = 0; t < kMaxT; ++t)
          for (int64_t o = 0; o < out; ++o) {
            const double a = single[size_t(t) * out + o], b = ref[size_t(t) * out + o];
            const double rel = std::fabs(a - b) / std::max(std::fabs(b), floor_[t]);
            if (!(rel <= max_rel)) max_rel = rel;  // NaN sticks
            if (std::memcmp(&a, &b, sizeof a) != 0) bitwise_product = false;
          }
        if (!(max_rel <= 1e-13)) {
          char b[96];
          std::snprintf(b, sizeof b, "differs from k3::gemm by %.3g (relative) > 1e-13", max_rel);
          why = b;
        }
        for (int T : kTs) {
          if (!why.empty() || T == 1 || !lab::gemm64_lab_applies(v, T, in)) continue;
          call(0, T, x.as<double>(), y.as<double>(), ct.stream());
          DELTAFIN_CUDA_CHECK(cudaStreamSynchronize(ct.stream()));
          const std::vector<double> yt = download(y, size_t(T) * out);
          if (std::memcmp(yt.data(), single.data(), yt.size() * sizeof(double)) != 0) {
            int64_t bad = 0;
            while (bad < T * out && std::memcmp(&yt[bad], &single[bad], sizeof(double)) == 0) ++bad;
            char b[128];
            std::snprintf(b, sizeof b, "not batch invariant: T=%d row %lld differs from that row alone", T,
                          static_cast<long long>(bad / out));
            why = b;
          }
        }
      } catch (const std::exception& e) {
        why = std::string("error: ") + e.what();
      }
      checks << (checks.tellp() > 0 ? ",\n" : "") << "    {\"shape\": \"" << shape_name << "\", \"variant\": \"" << name
             << "\", \"ok\": " << (why.empty() ? "true" : "false") << ", \"max_rel_diff\": " << max_rel
             << ", \"bitwise_product\": " << (bitwise_product ? "true" : "false") << ", \"why\": \"" << json_escape(why)
             << "\"}";
      const lab::Gemm64Params p = lab::gemm64_lab_params(v);
      if (why.empty() && p.ws == 8 && p.acc == 1 && p.ks == 1 && !bitwise_product)
        std::printf("NOTE %s %s: the product's order, yet not bit for bit the product's result\n", shape_name,
                    name.c_str());
      if (!why.empty()) {
        std::printf("FAIL %s %s: %s\n", shape_name, name.c_str(), why.c_str());
        fails.push_back(std::string(shape_name) + " " + name + ": " + why);
        continue;
      }
      std::string line;
      for (int T : kTs) {
        if (!lab::gemm64_lab_applies(v, T, in)) continue;
        try {
          const float ms =
              ct.per_call_ms(calls, [&](int i, cudaStream_t s) { call(i, T, x.as<double>(), y.as<double>(), s); });
          const double gbs = wbytes / (ms * 1e-3) / 1e9;
          results.push_back({out, T, name, ms, gbs, 100.0 * gbs / d2d_gbs});
          char b[32];
          std::snprintf(b, sizeof b, " T=%d %.1f%%", T, results.back().pct);
          line += b;
        } catch (const std::exception& e) {
          std::printf("FAIL %s %s T=%d: %s\n", shape_name, name.c_str(), T, e.what());
          fails.push_back(std::string(shape_name) + " " + name + ": " + e.what());
        }
      }
      std::fprintf(stderr, "[%s] %s max rel %.2g:%s\n", shape_name, name.c_str(), max_rel, line.c_str());
    }
  }

  // Table per shape: a row per variant, % of the copy rate per T; then the best per (shape, T).
  auto find = [&](int64_t out, int T, const std::string& v) -> const Result* {
    for (const Result& r : results)
      if (r.out == out && r.T == T && r.variant == v) return &r;
    return nullptr;
  };
  std::vector<std::string> names = {"product"};
  for (int v : variants) names.push_back(lab::gemm64_lab_name(v));
  for (const Shape& sh : shapes) {
    std::printf("\n%lldx%lld BF16, %% of the D2D copy rate (%.0f GB/s)\n%-20s", static_cast<long long>(sh.out),
                static_cast<long long>(kIn), d2d_gbs, "variant");
    for (int T : kTs) std::printf(" %6s%-2d", "T=", T);
    std::printf("\n");
    for (const std::string& n : names) {
      std::printf("%-20s", n.c_str());
      for (int T : kTs) {
        const Result* r = find(sh.out, T, n);
        if (r) std::printf(" %7.1f ", r->pct);
        else std::printf(" %7s ", "-");
      }
      std::printf("\n");
    }
  }
  struct Best {
    int64_t out;
    int T;
    const Result *best, *product;
  };
  std::vector<Best> bests;
  std::printf("\nbest per shape and T (%% of copy; the product's; speed-up)\n");
  for (const Shape& sh : shapes)
    for (int T : kTs) {
      const Result* best = nullptr;
      for (const Result& r : results)
        if (r.out == sh.out && r.T == T && (!best || r.ms < best->ms)) best = &r;
      const Result* prod = find(sh.out, T, "product");
      if (!best || !prod) continue;
      bests.push_back({sh.out, T, best, prod});
      std::printf("%7lldx%lld T=%-2d %-20s %6.1f%%  product %6.1f%%  x%.2f\n", static_cast<long long>(sh.out),
                  static_cast<long long>(kIn), T, best->variant.c_str(), best->pct, prod->pct, prod->ms / best->ms);
    }
  if (!fails.empty()) std::printf("\n%zu FAIL line(s) above: those variants are not ranked\n", fails.size());

  std::ofstream js(opt.json_path);
  js << "{\n  \"device\": \"" << json_escape(dev.name) << "\",\n  \"sm\": \"" << dev.cc_major << dev.cc_minor
     << "\",\n  \"sms\": " << dev.sm_count << ",\n  \"d2d_gbs\": " << d2d_gbs << ",\n  \"timing\": \""
     << (ct.graph() ? "graph" : "stream") << "\",\n  \"in\": " << kIn << ",\n  \"variants\": [\n";
  for (size_t i = 0; i < variants.size(); ++i) {
    const lab::Gemm64Params p = lab::gemm64_lab_params(variants[i]);
    js << "    {\"name\": \"" << lab::gemm64_lab_name(variants[i]) << "\", \"ws\": " << p.ws << ", \"rw\": " << p.rw
       << ", \"mt\": " << p.mt << ", \"d\": " << p.d << ", \"xm\": " << p.xm << ", \"acc\": " << p.acc
       << ", \"ks\": " << p.ks << ", \"pf\": " << p.pf << ", \"nt2\": " << p.nt2 << "}"
       << (i + 1 < variants.size() ? ",\n" : "\n");
  }
  js << "  ],\n  \"checks\": [\n" << checks.str() << "\n  ],\n  \"results\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    js << "    {\"out\": " << r.out << ", \"T\": " << r.T << ", \"variant\": \"" << r.variant
       << "\", \"median_ms\": " << r.ms << ", \"gbs\": " << r.gbs << ", \"pct_of_d2d\": " << r.pct << "}"
       << (i + 1 < results.size() ? ",\n" : "\n");
  }
  js << "  ],\n  \"best\": [\n";
  for (size_t i = 0; i < bests.size(); ++i) {
    const Best& b = bests[i];
    js << "    {\"out\": " << b.out << ", \"T\": " << b.T << ", \"variant\": \"" << b.best->variant
       << "\", \"pct_of_d2d\": " << b.best->pct << ", \"product_pct_of_d2d\": " << b.product->pct
       << ", \"speedup\": " << b.product->ms / b.best->ms << "}" << (i + 1 < bests.size() ? ",\n" : "\n");
  }
  js << "  ],\n  \"fails\": [\n";
  for (size_t i = 0; i < fails.size(); ++i)
    js << "    \"" << json_escape(fails[i]) << "\"" << (i + 1 < fails.size() ? ",\n" : "\n");
  js << "  ]\n}\n";
  std::printf("\nJSON written to %s\n", opt.json_path.c_str());
  return fails.empty() ? 0 : 1;
}

}  // namespace deltafin::cuda::bench
