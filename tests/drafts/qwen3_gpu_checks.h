#pragma once
// The Qwen3 drafter's GPU forward against the qwen3-tiny goldens and the CPU forward. Qt-free, so
// that a GPU machine without Qt runs the same checks through deltafin-qwen3-gpu-check; the Qt test
// test_qwen3_gpu calls them too.
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin::qwen3_checks {

struct Outcome {
  std::string name;
  bool ok = false;
  std::string detail;  // the measured errors, or what failed
};

// "" when the GPU backend can run here; otherwise why not (no CUDA build, no GPU, ...).
std::string gpu_unavailable_reason(const std::string& qwen3_tiny_dir);

// Golden logits (top-32 at every position, all at the last) with the prompt fed in two pieces,
// the 12 greedy ids of every prompt, and exact re-runs after truncate().
Outcome golden(const std::string& qwen3_tiny_dir);
// GPU vs CPU logits on random ids in random pieces (prefill, single rows, truncations), and the
// greedy continuations of both wherever the CPU's margin is clear.
Outcome gpu_matches_cpu(const std::string& qwen3_tiny_dir, uint64_t seed);

// Throughput of the drafter (no assertions; deltafin-qwen3-gpu-check --bench prints it).
struct BenchRow {
  std::string model, device;
  int context = 0;           // tokens in the cache before the measured steps
  double prefill_tok_s = 0;  // 64-row passes
  double decode_tok_s = 0;   // one-row forward_greedy steps
  double draft4_ms = 0;      // one proposal of 4 tokens: 4 greedy steps, then truncate back
  uint64_t weight_bytes = 0;
};
std::vector<BenchRow> bench(const std::string& qwen3_tiny_dir, bool synthetic_shapes, int reps);

}  // namespace deltafin::qwen3_checks
