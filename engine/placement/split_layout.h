#pragma once
// What a GPU forward does with a plan: which units (spine layers, lm_head) each GPU holds in VRAM,
// which GPU 0 streams in from RAM or disk per pass, and which device computes each unit in decode
// passes (1 row) and in prefill/verify passes (more rows). One SplitLayout per GPU says what that
// GPU holds and computes; a DeviceLayout puts the GPUs of a plan together. Plain data and
// arithmetic: the CUDA forward (engine/cuda) and the split session (placement/split_session.h)
// follow it, and CPU tests check it without a GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "placement/planner.h"
#include "runtime/spine_streamer.h"

namespace deltafin::placement {

enum class GpuCopy { None, Vram, Streamed };  // what GPU 0 holds of a unit's matrices

struct SplitUnit {
  GpuCopy gpu = GpuCopy::None;
  bool decode_gpu = false, prefill_gpu = false;  // computed on the GPU in passes of 1 row / of more rows
  bool from_disk = false;  // its host bytes stream from disk per pass (the SpineStreamer), not held in RAM
};

struct SplitLayout {
  std::vector<SplitUnit> layers;  // one per spine layer
  SplitUnit lm_head;
  uint64_t vram_expert_slots = 0;  // the plan's VRAM expert tier on GPU 0, in experts
  // Passes of at least this many rows compute where prefill_gpu says; fewer rows (decode, short
  // verify passes) where decode_gpu says. Above 2 when a unit the CPU decodes is faster on the GPU
  // only from that many rows on (Plan::prefill_from_rows).
  int prefill_from_rows = 2;

  int units() const { return int(layers.size()) + 1; }  // unit index: a layer, or layers.size() for lm_head
  const SplitUnit& unit(int u) const { return u == int(layers.size()) ? lm_head : layers.at(size_t(u)); }
  bool on_gpu(int u, int T) const {
    const SplitUnit& s = unit(u);
    return T < prefill_from_rows ? s.decode_gpu : s.prefill_gpu;
  }
  bool any_gpu() const;        // any unit computed on the GPU in some pass
  bool any_cpu() const;        // any unit computed on the CPU in some pass
  int streamed_units() const;  // units the GPU computes from RAM or disk
  // Throws Error unless every unit the GPU computes has a GPU copy, every VRAM unit is computed
  // on the GPU in both kinds of pass, and there is one entry per layer.
  void check(int layers) const;
  std::string describe() const;  // "layers 0-5 VRAM, 6-9 RAM (CPU decode, GPU prefill), lm_head CPU"
};

// Every unit in VRAM, computed on the GPU (the whole spine on one GPU).
SplitLayout all_on_gpu(int layers);
// The plan's placement for its only GPU; Error for plans over several GPUs (device_layout).
SplitLayout split_layout(const Plan& p);
// What GPU `gpu` of the plan holds and computes: its VRAM units, and on GPU 0 the units it streams;
// units other devices compute are left out (GpuCopy::None, as CPU units). Its VRAM expert tier.
SplitLayout split_layout(const Plan& p, int gpu);

// A plan over any number of GPUs (one or more): each GPU's layout and which device computes each
// unit (kCpu or a GPU index) in passes of one row and of more rows.
struct DeviceLayout {
  std::vector<SplitLayout> gpus;     // what each GPU holds and computes
  std::vector<int> decode, prefill;  // per unit (layers, then lm_head): kCpu or a GPU index
  int prefill_from_rows = 2;         // passes of fewer rows compute where decode says (SplitLayout's)
  int layers() const { return int(decode.size()) - 1; }
  int device(int unit, int T) const {
    return T < prefill_from_rows ? decode.at(size_t(unit)) : prefill.at(size_t(unit));
  }
  // Throws Error unless every GPU's layout is consistent (SplitLayout::check) and computes exactly
  // the units the device arrays give it.
  void check(int layers) const;
  std::string describe() const;  // "GPU 0: layers 0-20 VRAM (GPU), ...; GPU 1: ..."
};
// The plan as executed (Error when a GPU's layout is inconsistent).
DeviceLayout device_layout(const Plan& p);
// A one-GPU layout as a DeviceLayout (GPU 0 computes what the layout says, the CPU the rest).
DeviceLayout one_gpu(SplitLayout s);

// The contiguous layer range each GPU holds in VRAM, as `deltafin plan` shows it.
struct GpuRange {
  int gpu = 0;
  int first = 0, last = 0;   // layers [first, last) in its VRAM; first == last: none
  bool lm_head = false;      // lm_head in its VRAM
  uint64_t spine_bytes = 0;  // the units in its VRAM
  int streamed = 0;          // units it computes from RAM or disk in some pass
};
// Error when a GPU's VRAM layers are not one contiguous range (the planner fills GPUs in order).
std::vector<GpuRange> gpu_ranges(const Plan& p);
// What the host model holds for a split plan: RAM units only the CPU computes are owned (copied at
// load into huge pages); RAM units the CPU and a GPU both compute are owned when anything streams
// from disk (so the streamed bytes cannot push them out) or when shared_spine_copy() is on, and
// mapped otherwise; disk units stream; VRAM units and RAM units only the GPU computes stay mapped
// (read once at load, into the GPU or into the pinned copy it streams from).
SpinePlacement host_spine_placement(const Plan& p);
// Whether a GPU streams a RAM unit the host owns straight from the host's buffer (pinned in place)
// rather than from a second, pinned copy: then a unit the CPU decodes and the GPU prefills is held
// once, in huge pages, and the CPU's passes read it there instead of from 4 KB page-cache pages.
// Off until measured on a GPU (the CPU-bound placement rows); DELTAFIN_SHARED_SPINE=1 turns it on.
bool shared_spine_copy();

// A pass's layers grouped into runs on one device, in order.
struct PassSegment {
  bool gpu = false;
  int first = 0, last = 0;  // layers [first, last)
};
std::vector<PassSegment> pass_segments(const SplitLayout& s, int T);
// The same over several GPUs: runs of layers on one device (kCpu or a GPU index), in order.
struct DeviceSegment {
  int device = kCpu;
  int first = 0, last = 0;  // layers [first, last)
};
std::vector<DeviceSegment> device_segments(const DeviceLayout& d, int T);

// The order in which a pass of T rows copies the units the GPU computes but does not hold in VRAM
// into its two device stream buffers, interleaved with their computation. A unit whose host bytes
// are in RAM is copied while the unit before it computes (copy of unit i+1 issued before compute of
// unit i, into the buffer unit i-1 used, once that compute has ended); a unit read from disk is
// copied just before its computation (its bytes arrive through the spine streamer, in pass order).
struct StreamStep {
  enum Kind { Copy, Compute } kind = Copy;
  int unit = 0;
  int slot = 0;
  int after = -1;  // Copy: the unit whose computation must end before the copy overwrites the slot
};
std::vector<StreamStep> stream_schedule(const SplitLayout& s, int T);

}  // namespace deltafin::placement
