#pragma once
// What the CPU forward does with a plan: RAM-homed units stay mapped in place when nothing streams
// (the page cache holds them) and are copied into engine RAM when something does (so that the
// streamed bytes cannot push them out); disk-homed units stream per pass. VRAM-homed units belong
// to a GPU forward; a CPU forward reads them in place.
#include "placement/planner.h"
#include "runtime/spine_streamer.h"
#include "store/tiered_expert_source.h"

namespace deltafin::placement {

SpinePlacement cpu_spine_placement(const Plan& p);

// Sizes the host's RAM expert tier (CPU and split plans alike) as the plan says: exactly its
// ram_slots slots. The other fields of `so` stay as they are.
void size_ram_tier(const Plan& p, StoreOptions& so);

}  // namespace deltafin::placement
