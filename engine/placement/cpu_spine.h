#pragma once
// What the CPU forward does with a plan: RAM-homed units are copied into engine RAM, in huge pages
// (the page cache maps them in 4 KB pages, and the TLB misses cost the memory-bound decode a fifth
// of its speed: resident decode of a 4-layer real-dimension slice 0.24-0.28 -> 0.20-0.21 s/token on
// the 2-vCPU VM; and streamed bytes cannot push them out); disk-homed units stream per pass.
// VRAM-homed units belong to a GPU forward; a CPU forward reads them in place.
#include "placement/planner.h"
#include "runtime/spine_streamer.h"
#include "store/tiered_expert_source.h"

namespace deltafin::placement {

SpinePlacement cpu_spine_placement(const Plan& p);

// Sizes the host's RAM expert tier (CPU and split plans alike) as the plan says: exactly its
// ram_slots slots. The other fields of `so` stay as they are.
void size_ram_tier(const Plan& p, StoreOptions& so);

}  // namespace deltafin::placement
