#pragma once
// How much memory the planner may use on each device: measured free memory by default, or the
// budgets given on the command line (checked against what the device has).
#include <cstdint>
#include <string>
#include <vector>

namespace deltafin::placement {

struct GpuBudget {
  std::string name;     // e.g. "GPU 0 (NVIDIA H200)"
  uint64_t budget = 0;  // bytes the plan may use
  uint64_t total = 0;   // the device's memory (0: unknown, a machine being planned for)
  int device = -1;      // the logical CUDA device it is on this machine (-1: a machine being planned for)
};

struct MachineBudget {
  std::vector<GpuBudget> gpus;  // empty: CPU only
  uint64_t ram_budget = 0;
  uint64_t ram_total = 0;  // 0: unknown (planning another machine)
  std::string ram_source;  // "free memory" or "--ram-budget"
};

// This machine's RAM: MemAvailable minus a safety margin (10 %, at least 2 GiB) and MemTotal.
MachineBudget this_machine_ram();

// "32" or "32,32" (GB, one per GPU) -> bytes; throws Error naming the bad entry.
std::vector<uint64_t> parse_gb_list(const std::string& text, const std::string& flag);

// Replaces the RAM budget with `gb` (GB = 1e9 bytes); throws Error when it exceeds the machine's
// memory (ram_total, when known).
void set_ram_budget(MachineBudget& m, double gb);  // other machines: ram_total = 0, nothing to check
// Replaces the GPUs' budgets with one figure per GPU: on this machine the count must match its
// GPUs and each must fit its device; for another machine (other_machine) the GPUs are created.
void set_vram_budgets(MachineBudget& m, const std::vector<uint64_t>& bytes, bool other_machine);

std::string format_gb(uint64_t bytes);  // "113.5 GB"; below 1 GB three digits rounded up, "0.00342 GB"
// A minimum the user is told to give: never rounded below it ("1.2 GB" for 1.116 GB).
std::string format_gb_at_least(uint64_t bytes);

// The CUDA devices the engine uses, one per logical GPU: `text` is empty (every one of the
// `visible` devices, in order) or a comma-separated list of device ordinals, e.g. "0,1" or "0,0"
// (two logical GPUs on device 0: the hand-over between GPUs runs for real on a machine with one).
// Throws Error naming a bad entry or a device that is not visible. DELTAFIN_CUDA_DEVICES is read
// through this (engine/cuda/gpu_rates.h).
std::vector<int> parse_device_list(const std::string& text, int visible);

}  // namespace deltafin::placement
