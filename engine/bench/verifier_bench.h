#pragma once
#include <string>
#include <vector>

namespace deltafin {

// Cost of verify passes of T rows against a plain T = 1 step, on one model,
// with experts resident (page cache, warmed) or streamed (read from disk on
// every pass). Tells at what acceptance drafting pays.
struct VerifyBenchOptions {
  std::string model_root;
  std::vector<int> rows = {1, 2, 4, 8};
  int context = 64;  // tokens prefilled before timing
  int reps = 5;      // timed passes per T (median reported), after one warm-up pass
  bool streamed = false;
  uint64_t seed = 1;
};

struct VerifyBenchRow {
  int T = 0;
  double median_s = 0, min_s = 0;
  double experts_per_pass = 0;  // distinct routed experts fetched per pass (all MoE layers)
  double expert_mb_per_pass = 0;
  double cost_ratio = 0;            // median(T) / median(1)
  double breakeven_tokens = 0;      // accepted guesses per pass needed to pay: cost_ratio - 1
  double breakeven_acceptance = 0;  // i.i.d. per-guess acceptance with the same expected yield (>1: never pays)
};

struct VerifyBenchResult {
  std::string model_root, expert_source, cpu_kernels;
  int threads = 0, context = 0;
  bool streamed = false;
  std::vector<VerifyBenchRow> rows;
  std::string json() const;
};

VerifyBenchResult run_verify_bench(const VerifyBenchOptions& opts);

// Per-guess acceptance a with (1 - a^T) / (1 - a) = ratio (the expected tokens
// of a T-row pass whose T-1 guesses are each accepted with probability a).
double breakeven_acceptance(int T, double ratio);

}  // namespace deltafin
