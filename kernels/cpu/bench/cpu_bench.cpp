// deltafin-cpu-bench: every CPU kernel version (scalar, AVX2, AVX-512 where the CPU has them) at
// K3's real shapes for T = 1, 2, 4, 8 rows, on one thread or on several (the rows of the matrix
// split between them as the engine splits them). Prints a table and writes JSON.
// A benchmark program, not a test: nothing here asserts a timing.
//   deltafin-cpu-bench [--threads N] [--reps N] [--json FILE] [--no-scalar]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/gemm.h"

using namespace deltafin::kernels;

namespace {

enum class Kind { Bf16, Mxfp4 };

struct Shape {
  const char* name;
  Kind kind;
  int64_t rows, in;
};

// The expert's gate (and up) and down projections, and the spine's square and lm_head-like shapes.
const Shape kShapes[] = {
    {"expert gate/up 3072x3584 (MXFP4)", Kind::Mxfp4, 3072, 3584},
    {"expert down 3584x3072 (MXFP4)", Kind::Mxfp4, 3584, 3072},
    {"spine 7168x7168 (BF16)", Kind::Bf16, 7168, 7168},
};

struct Result {
  std::string shape, isa;
  int T = 0, threads = 0;
  double ms = 0, gbs = 0, gflops = 0;
};

double weight_bytes(const Shape& s) {
  return s.kind == Kind::Mxfp4 ? double(s.rows) * s.in / 2 + double(s.rows) * s.in / 32 : double(s.rows) * s.in * 2;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, reps = 7;
  bool scalar = true;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "--no-scalar") scalar = false;
    else {
      std::fprintf(stderr, "usage: deltafin-cpu-bench [--threads N] [--reps N] [--json FILE] [--no-scalar]\n");
      return 2;
    }
  }
  std::mt19937_64 rng(11);
  std::vector<Result> results;
  std::printf(
      "| shape | ISA | T | threads | ms (best of %d) | weight GB/s | GFLOP/s |\n| --- | --- | ---: | ---: | ---: | "
      "---: | ---: |\n",
      reps);
  for (const Shape& s : kShapes) {
    // Random weights with moderate values: E8M0 scales near 2^0, BF16 exponents near 2^0.
    std::vector<uint8_t> w(s.kind == Kind::Mxfp4 ? size_t(s.rows * s.in / 2) : size_t(s.rows * s.in * 2));
    for (auto& b : w) b = uint8_t(rng());
    if (s.kind == Kind::Bf16)
      for (size_t i = 1; i < w.size(); i += 2) w[i] = uint8_t((w[i] & 0x80) | 0x3c | (w[i] & 1));
    std::vector<uint8_t> scale(s.kind == Kind::Mxfp4 ? size_t(s.rows * s.in / 32) : 0);
    for (auto& b : scale) b = uint8_t(124 + rng() % 6);
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      if (!isa_supported(isa) || (isa == Isa::Scalar && !scalar)) continue;
      const KernelTable& k = table_for(isa);
      for (int T : {1, 2, 4, 8}) {
        std::vector<float> x(size_t(T) * s.in), y(size_t(T) * s.rows);
        std::normal_distribution<float> nd;
        for (auto& v : x) v = nd(rng);
        auto run_part = [&](int64_t o0, int64_t o1) {
          RowsArgs a{w.data(), scale.data(), s.in, o0, o1, x.data(), s.in, T, y.data(), s.rows};
          if (s.kind == Kind::Mxfp4) k.mxfp4_rows(a);
          else k.bf16_rows(a);
        };
        double best = 1e30;
        for (int r = 0; r < reps + 1; ++r) {  // the first run warms caches and is not counted
          const auto t0 = std::chrono::steady_clock::now();
          if (threads == 1) {
            run_part(0, s.rows);
          } else {
            std::vector<std::thread> th;
            for (int i = 0; i < threads; ++i)
              th.emplace_back(run_part, s.rows * i / threads, s.rows * (i + 1) / threads);
            for (auto& t : th) t.join();
          }
          const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (r) best = std::min(best, dt);
        }
        Result res{
            s.name, k.name, T, threads, best * 1e3, weight_bytes(s) / best / 1e9, 2.0 * s.rows * s.in * T / best / 1e9};
        std::printf("| %s | %s | %d | %d | %.3f | %.2f | %.1f |\n", s.name, k.name, T, threads, res.ms, res.gbs,
                    res.gflops);
        std::fflush(stdout);
        results.push_back(res);
      }
    }
  }
  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\"bench\": \"cpu-kernels\", \"best_isa\": \"" << isa_name(best_isa()) << "\", \"results\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      f << "  {\"shape\": \"" << r.shape << "\", \"isa\": \"" << r.isa << "\", \"T\": " << r.T
        << ", \"threads\": " << r.threads << ", \"ms\": " << r.ms << ", \"weight_gbs\": " << r.gbs
        << ", \"gflops\": " << r.gflops << "}" << (i + 1 < results.size() ? ",\n" : "\n");
    }
    f << "]}\n";
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", json.c_str());
      return 1;
    }
  }
  return 0;
}
