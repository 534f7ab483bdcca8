#pragma once
// The placement planner: given the model's byte map, the memory budgets and the measured rates,
// decides where every spine layer, lm_head and the expert tiers live (VRAM / RAM / streamed from
// disk), which device computes each layer, and predicts decode and prefill time per token with the
// resource that bounds it. Plain arithmetic on bytes: no device is touched.
#include <cstdint>
#include <string>
#include <vector>

#include "placement/bandwidths.h"
#include "placement/machine_budget.h"
#include "placement/model_byte_map.h"

namespace deltafin::placement {

enum class Home { Vram, Ram, Disk };  // Disk: read per pass with direct I/O into a stream buffer
const char* home_name(Home h);

constexpr int kCpu = -1;  // the compute device of a unit: kCpu or a GPU index

struct UnitPlan {
  int unit = 0;               // layer index, or kLmHeadUnit
  uint64_t bytes = 0;         // matrix bytes: what its home holds and a stream reads (lm_head: all of it)
  uint64_t router_bytes = 0;  // read per pass too, but always resident in RAM (and copied with the layer to a GPU)
  uint64_t flops_per_row = 0;
  Home home = Home::Ram;
  int gpu = -1;  // the GPU whose VRAM holds it (Home::Vram)
  int decode_device = kCpu, prefill_device = kCpu;
};

struct ExpertTierPlan {
  // The engine's RAM tier over the direct reads: its slots (at least two) and their bytes.
  // store_budget() is the budget that gives a TieredExpertSource exactly ram_slots slots.
  uint64_t store_budget(uint64_t expert_bytes) const { return ram_slots * (expert_bytes + 8192); }
  std::vector<uint64_t> vram_bytes;  // per GPU
  uint64_t ram_bytes = 0;
  uint64_t vram_slots = 0, ram_slots = 0;
};

// One phase's predicted time per token and what each resource spends on it (seconds per pass).
struct PhasePrediction {
  int rows = 1;  // rows per pass (decode 1, prefill a chunk)
  double seconds_per_token = 0;
  double disk_s = 0, h2d_s = 0, cpu_s = 0, gpu_s = 0;  // per pass
  double expert_h2d_s = 0;       // of h2d_s, the copies of the pass's routed experts (they wait for its routing)
  double expert_disk_bytes = 0;  // per pass
  std::string bound;             // "disk", "PCIe", "CPU", "GPU"
};

struct PlanOptions {
  int prefill_rows = 64;                    // rows of a prefill pass (the decode loop's prefill chunk)
  int gpu_prefill_rows = 16;                // the GPU session's rows per pass
  int64_t context_tokens = 8192;            // MLA cache reserved per session
  uint64_t gpu_scratch_bytes = 1ull << 30;  // activations, routing, kernel workspace per GPU
  uint64_t ram_scratch_bytes = 1ull << 30;  // activations and expert scratch on the CPU
};

struct Plan {
  ModelByteMap bytes;
  MachineBudget budget;
  Bandwidths rates;
  PlanOptions options;
  std::vector<UnitPlan> units;  // layers in order, then lm_head
  ExpertTierPlan experts;
  uint64_t ram_reserved = 0;            // small tensors, session state, scratch, stream buffers
  uint64_t ram_stream_buffers = 0;      // 2 x the largest disk-streamed unit (0 when none streams)
  std::vector<uint64_t> vram_reserved;  // per GPU: scratch, KV of its layers, stream buffers
  uint64_t ram_minimum = 0;             // the smallest RAM budget any plan of this model needs
  uint64_t vram_minimum = 0;            // the smallest useful VRAM budget per GPU
  PhasePrediction decode, prefill;
  // Passes of at least this many rows compute on the prefill devices, fewer on decode's: the rows
  // from which every unit the CPU decodes and a GPU prefills is faster on the GPU (2: all of them
  // from two rows on). A short verify pass then stays where decode runs instead of copying those
  // units over PCIe and moving their states.
  int prefill_from_rows = 2;
  std::vector<std::string> notes;

  uint64_t spine_in(Home h) const;  // bytes of units with that home
  uint64_t spine_in_gpu(int gpu) const;
  int streamed_units() const;
};

// Whether the CUDA forward's default (no budgets: the whole spine, the session state for
// `context` tokens and its scratch in one GPU's memory) fits in `free_vram` bytes. When it does
// not (real K3 on a 24-96 GB GPU), a run without budgets is planned under free VRAM and RAM.
bool whole_spine_fits_gpu(const ModelByteMap& bytes, uint64_t free_vram, int64_t context, const PlanOptions& o = {});

// Throws Error when a budget is too small for one layer's working set (naming the minimum).
Plan make_plan(const ModelByteMap& bytes, const MachineBudget& budget, const Bandwidths& rates,
               const PlanOptions& o = {});

// The same placement predicted under other rates (the plan's rates replaced): a floor measured
// again beside a run, where the machine's rates move (a shared host's memory bandwidth).
void repredict(Plan& plan, const Bandwidths& rates);

// The single change that would speed decode most ("+64 GB RAM: spine fully in RAM, predicted
// 2.10 -> 1.40 s/token"), among more RAM, more VRAM or a GPU, and a second disk; "" when none helps.
std::string what_would_help(const Plan& plan);

}  // namespace deltafin::placement
