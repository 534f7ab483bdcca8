#pragma once
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
};

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
  // O_DIRECT bandwidth probed just before this arm's cold run (the disk's speed
  // drifts, so each run's disk floor uses the probe taken next to it); 0 if none.
  double probe_gbps = 0;
};

struct BenchReport {
  std::vector<BenchRun> runs;
  double direct_read_gbps = 0;  // median of the O_DIRECT expert read probes
  std::string io_engine;
  bool ids_identical = true;
  std::string first_difference;
  std::string json() const;  // every run, medians with min/max per (arm, mode), floors
};

// Runs every arm `reps` times in alternating order (cold then warm each time)
// and checks that every run produced the same ids.
BenchReport run_bench(const BenchPlan& plan, const std::vector<BenchArm>& arms,
                      const std::function<void(const std::string&)>& progress = {});

// Drops the page-cache copy of every shard (posix_fadvise DONTNEED), then reads
// back every non-expert tensor so that only experts start cold.
void make_experts_cold(const std::string& model_root);

}  // namespace deltafin
