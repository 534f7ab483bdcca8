#pragma once
// How fast the disk delivers routed experts with O_DIRECT reads: the planner's disk rate
// (bandwidths.h probe_disk) and the bench command's per-run probe.
#include <cstdint>
#include <string>

namespace deltafin {

// Reads `n` random experts of the checkpoint (chosen by `seed`) with O_DIRECT at
// queue depth `qd` and returns GB/s (1e9 bytes per second) of expert bytes
// delivered. A new seed per probe keeps a host-side disk cache from serving a
// repeat of the previous probe.
double measure_direct_read_gbps(const std::string& model_root, int n, int qd, std::string* engine_name = nullptr,
                                uint32_t seed = 12345);

}  // namespace deltafin
