#pragma once
// The placement plans executed on a GPU machine: a real-dimension slice of K3 run under budgets
// that keep the real model's proportions of the machines people own (a 24-96 GB GPU with 64-256 GB
// of RAM), predicted against measured decode and prefill time per token, ids compared across arms
// (the whole slice on the GPU and on the CPU are the references). deltafin-cuda-k3 hybrid runs it.
#include <ostream>
#include <string>
#include <vector>

namespace deltafin::cuda {

struct HybridMachine {
  double gpu_gb = 0, ram_gb = 0;  // the real machine whose proportions an arm keeps
};

struct HybridBenchOptions {
  std::string slice_root;      // the slice (deltafin synth ... --set layers=12 ...)
  std::string real_meta_root;  // the real K3's config (tests/fixtures/k3-real-meta)
  std::vector<HybridMachine> machines;
  int prompt_len = 32, new_tokens = 8, reps = 2;  // timed runs per arm: the first cold, the median of the rest reported
  double gpu_tflops = 0;                          // the planner's GPU matmul rate; 0: measured (k3::gemm)
  bool references = true;                         // also run the whole slice on the GPU and on the CPU
};

// Writes a Markdown table (one row per machine, then the references) and returns false when some
// arm's ids differ from the first arm's.
bool bench_hybrid(const HybridBenchOptions& o, std::ostream& out);

struct MultiGpuBenchOptions {
  std::string slice_root;  // a real-dimension slice (deltafin synth)
  int gpus = 0;            // GPUs to spread over: 0 = every logical GPU, at least 2 (one device: 2 logical GPUs on it)
  double spine_share =
      0;  // each GPU's budget holds this share of the slice's spine (0: 1.25 / GPUs, so none holds it all)
  int prompt_len = 16, new_tokens = 8, reps = 2;
  double gpu_tflops = 0;  // the planner's GPU matmul rate; 0: measured (k3::gemm)
};

// The slice planned over several GPUs whose budgets each hold less than its spine: the plan's
// per-GPU layer ranges and the one-GPU plan under the same budget, then measured prefill and
// decode s/token against the plan's floors, the hand-overs and how they were copied, and the ids
// against the whole slice on one GPU. Writes Markdown; returns false when the ids differ.
bool bench_multigpu(const MultiGpuBenchOptions& o, std::ostream& out);

}  // namespace deltafin::cuda
