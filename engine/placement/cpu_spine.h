#pragma once
// What the CPU forward does with a plan: RAM-homed units stay mapped in place when nothing streams
// (the page cache holds them) and are copied into engine RAM when something does (so that the
// streamed bytes cannot push them out); disk-homed units stream per pass. VRAM-homed units belong
// to a GPU forward; a CPU forward reads them in place.
#include "placement/planner.h"
#include "runtime/spine_streamer.h"

namespace deltafin::placement {

SpinePlacement cpu_spine_placement(const Plan& p);

}  // namespace deltafin::placement
