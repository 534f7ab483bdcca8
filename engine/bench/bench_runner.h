#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "placement/direct_read_probe.h"  // measure_direct_read_gbps, the per-run disk probe
#include "store/expert_source.h"
#include "runtime/spine_streamer.h"
#include "store/tiered_expert_source.h"

namespace deltafin {

// One configuration under test. Without `store` the arm reads experts in place
// through the page cache (mmap).
struct BenchArm {
  std::string name;
  std::string flags;  // as given, for the report
  std::optional<StoreOptions> store;
  int threads = 0;
  std::optional<SpinePlacement> spine =
      std::nullopt;  // the spine as a placement plan puts it (default: mapped in place)
  // The compute floor: runs ("resident") in which, before each decode step and outside its time,
  // the step's experts (as an earlier run of the same workload asked for them) are read into a RAM
  // cache that holds one step's experts, so the step computes with every expert in RAM. The
  // store's cache size, policy and prefetch are set for that; its I/O flags are used.
  bool compute_floor = false;
  // A GPU arm (`--device cuda`, CUDA builds only): the same workload on the GPU session that
  // `run --device cuda` opens without a plan (the whole spine in VRAM), its VRAM expert tier over
  // this arm's RAM tier (`store`, required) and direct reads. With compute_floor: the GPU compute
  // floor, each decode step run with every expert it needs already in VRAM (the tier emptied and
  // the step's experts copied in before the step, outside its time and counters).
  bool cuda = false;
  int vram_experts = 0;  // slots of the VRAM tier; 0 = the product's choice (every expert when all fit)
  // `--host-guesses`: the GPU's next-layer guesses also go to the RAM tier's prefetch
  // (CudaK3Model::Options::host_guesses), so one run compares the GPU path with and without them.
  bool host_guesses = false;
};

// Throws Error (naming the arm and the flag) for an arm that cannot run: --vram-experts without
// --device cuda, a GPU arm without the RAM tier or under a --ram-budget plan, or a GPU arm in a
// build without the CUDA backend. run_bench checks every arm before it runs any.
void check_bench_arm(const BenchArm& arm);

// The VRAM tier's counters over one phase of a GPU run (runtime/decode_session.h's VramTierStats).
struct BenchVram {
  uint64_t requests = 0, hits = 0, misses = 0, bytes_h2d = 0;
  uint64_t direct = 0;      // misses copied straight from the pinned RAM tier
  double fill_seconds = 0;  // host wall time supplying misses
  BenchVram operator-(const BenchVram& o) const {
    return {requests - o.requests,   hits - o.hits,     misses - o.misses,
            bytes_h2d - o.bytes_h2d, direct - o.direct, fill_seconds - o.fill_seconds};
  }
};

// The floors of one run's decode in seconds per token (each 0 where it has no bytes or was not
// measured) and the run's time against them. GPU runs have all three; CPU runs no PCIe floor.
struct FloorInputs {
  double disk_bytes_per_token = 0;  // expert bytes the decode needed from the disk
  double disk_gbps = 0;             // the disk's rate (probe or the run's own, the faster)
  double h2d_bytes_per_token = 0;   // bytes the VRAM tier copied host -> device (GPU runs)
  double h2d_gbps = 0;              // pinned host -> device rate probed in the same bench run
  bool has_compute = false;         // a compute floor was measured for the run's kind
  double compute_seconds = 0;       // it: CPU (same thread count) or GPU, seconds per token
};
struct DecodeFloors {
  double disk = 0, pcie = 0, compute = 0;
  bool has_compute = false;
  double max() const { return std::max(disk, std::max(pcie, compute)); }
  double sum() const { return disk + pcie + compute; }
};
DecodeFloors decode_floors(const FloorInputs& in);
// seconds / floor; 0 when the floor is 0 (nothing to compare with).
double floor_ratio(double seconds, double floor);

struct BenchPlan {
  std::string model_root;
  std::vector<int32_t> prompt;
  int new_tokens = 8;
  int reps = 3;
  bool cold = true, warm = true;
  bool measure_bandwidth = true;
  int bandwidth_experts = 64;
};

struct BenchRun {
  std::string arm, mode;  // mode: cold | warm
  int rep = 0;
  int threads = 0;          // compute threads of the arm (0 = all cores)
  bool ram_tier = false;    // experts through the RAM tier (its counters see disk reads; mmap's do not)
  int compute_threads = 1;  // threads the compute actually used
  // CPU time the hypervisor took from this machine during decode (/proc/stat
  // "steal", all CPUs), per token. On a VM whose disk emulation is charged to
  // the guest's CPU quota this grows with the bytes read and slows the compute.
  double decode_steal_seconds_per_token = 0;
  // Kernel CPU time of this process during decode (getrusage), per token: system calls, page
  // faults and, for O_DIRECT reads, page pinning and completion interrupts; on a VM whose disk
  // emulation runs on the guest's CPUs it grows with the bytes read.
  double decode_sys_seconds_per_token = 0;
  double prefill_seconds = 0, decode_seconds_per_token = 0, first_token_seconds = 0;
  std::vector<int32_t> ids;
  ExpertCounters prefill, decode;  // counter deltas of each phase
  bool spine_warm = true;
  double preload_seconds = 0;  // resident runs: the untimed reads before each step
  // O_DIRECT bandwidth probed just before and just after this run: before an arm's cold run, between
  // a RAM-tier arm's cold and warm runs, and before the next arm (one more after the last arm). The
  // disk's speed drifts, so each run's disk floor uses the probes that bracket it; 0 if none.
  double probe_gbps = 0, probe_after_gbps = 0;
  // GPU arms: the VRAM tier's counters per phase, its slots, whether every expert of the model was
  // resident (routing on the device, no lookups counted), and the pinned host -> device rate probed
  // before this arm's runs.
  bool gpu = false;
  BenchVram prefill_vram, decode_vram;
  int vram_slots = 0;
  bool vram_all_resident = false;
  double h2d_probe_gbps = 0;
};

struct BenchReport {
  std::vector<BenchRun> runs;
  double direct_read_gbps = 0;  // median of the O_DIRECT expert read probes
  double h2d_gbps = 0;          // median of the pinned host -> device probes (GPU arms; 0: none)
  std::string io_engine;
  bool ids_identical = true;
  std::string first_difference;
  std::string json() const;  // every run, medians with min/max per (arm, mode), floors
};

// Runs every arm `reps` times in alternating order (cold then warm each time)
// and checks that every run produced the same ids (CPU and GPU arms alike).
BenchReport run_bench(const BenchPlan& plan, const std::vector<BenchArm>& arms,
                      const std::function<void(const std::string&)>& progress = {});

// Drops the page-cache copy of every shard (posix_fadvise DONTNEED), then reads
// back every non-expert tensor so that only experts start cold.
void make_experts_cold(const std::string& model_root);

}  // namespace deltafin
