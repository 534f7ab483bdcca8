#pragma once
// Where expert lookups were served, as shares that add up to at most 100 %. The engine's
// counters overlap: a stream install counts every lookup as a disk read (the bytes are read
// from the local shard file even when they had just been fetched), and its network fetches
// include the ones made by Warm and by prefetch, which are not lookups at all. Each lookup is
// therefore counted once, in the fastest tier that can have served it: VRAM, RAM, network
// (a fetch it had to wait for), then local disk.
#include "chat_types.h"

namespace deltafin::gui {

struct TierShares {
  quint64 lookups = 0;
  quint64 vram = 0, ram = 0, network = 0, disk = 0;  // lookups per tier; their sum <= lookups
  double share(quint64 count) const {
    return lookups ? static_cast<double>(count) / static_cast<double>(lookups) : 0.0;
  }
};

TierShares tierShares(const CacheCounters& counters);

}  // namespace deltafin::gui
