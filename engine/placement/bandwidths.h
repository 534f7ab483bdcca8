#pragma once
// The rates the placement planner divides bytes and operations by. Probed once on this machine and
// cached beside the model; any figure can be given instead (to plan for another machine).
#include <optional>
#include <string>

namespace deltafin::placement {

struct Bandwidths {
  // GB/s are 1e9 bytes per second.
  double disk_gbps = 0;       // O_DIRECT reads of the model's shard files (random experts, queue depth 16)
  double ram_gbps = 0;        // a streaming read of RAM by every compute thread
  double cpu_bf16_gbps = 0;   // weight bytes per second of the CPU BF16 matmul at one row (decode)
  double cpu_mxfp4_gbps = 0;  // expert bytes per second of the CPU MXFP4 matmul at one row
  double cpu_gflops = 0;      // the CPU BF16 matmul at 64 fp64 rows (prefill, verify), 1e9 flop/s
  int cpu_threads = 0;        // compute threads the CPU figures were taken with
  double h2d_gbps = 0;        // pinned host to device copies (0: no GPU)
  double hbm_gbps = 0;        // device memory read by the GPU kernels
  double gpu_tflops = 0;      // the GPU's matmul rate at many rows, 1e12 flop/s
  std::string source;         // "measured <date>", "cache FILE", "given", or a mix
  // How the figures were measured (kProbeMethod when this engine measured them; 1 for records
  // written before the field existed).
  int probe_method = 0;

  bool has_gpu_figures() const { return h2d_gbps > 0 && hbm_gbps > 0 && gpu_tflops > 0; }
  std::string json() const;
  static Bandwidths from_json(const std::string& text, const std::string& origin);  // throws Error
};

// The way probe_cpu and probe_disk measure, raised whenever it changes so that rates cached by an
// older engine are measured again instead of planning with them. 2: probe buffers in huge pages, as
// the expert cache and the streamed spine's buffers are mapped. 3: the weight probes read four
// times the last-level cache (at least 1 GiB) per pass, so that no cache serves them. 4: the memory
// probes report the median of seven passes, not the best of three (a shared host's quiet moment).
// 5: the matmul probes run the forward's fp64 kernels (fp64 activations), not the fp32 ones.
constexpr int kProbeMethod = 5;

// Figures given on the command line; each replaces the probed or cached one.
struct BandwidthOverrides {
  std::optional<double> disk_gbps, ram_gbps, cpu_bf16_gbps, cpu_mxfp4_gbps, cpu_gflops, h2d_gbps, hbm_gbps, gpu_tflops;
  bool any() const;
  void apply(Bandwidths& b) const;
};

// What a machine this engine was not measured on is assumed to do, for planning other machines:
// a 16-core desktop CPU with AVX-512 and two-channel DDR5, a PCIe 4.0 x16 GPU (docs/PLACEMENT.md).
Bandwidths assumed_desktop();

// CPU and RAM rates of this machine with the engine's own kernels (a few seconds).
void probe_cpu(Bandwidths& b);
// O_DIRECT read rate of the checkpoint's shards (random routed experts); needs the shard files.
void probe_disk(Bandwidths& b, const std::string& model_root);

// The cache file beside the model (MODEL/deltafin-bandwidths.json), or under
// $XDG_CACHE_HOME/deltafin when the model folder is read-only.
std::string bandwidth_cache_path(const std::string& model_root);
// The cached rates, unless they were measured by another probe method (then none: probe again).
std::optional<Bandwidths> load_cached_bandwidths(const std::string& model_root);
void save_cached_bandwidths(const std::string& model_root, const Bandwidths& b);  // best effort

}  // namespace deltafin::placement
