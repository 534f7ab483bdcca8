#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/read_engine.h"

namespace deltafin {

// The read queue depth a disk wants: bandwidth rises with reads in flight until the device is
// saturated, and more in flight after that only adds latency to the read the compute waits for.
struct QueueDepthProbe {
  int best = 16;                             // the smallest depth within 5 % of the fastest
  std::vector<std::pair<int, double>> gbps;  // (depth, GB/s) as measured
  std::string describe() const;              // "QD 1 0.41, 2 0.80, ... GB/s"
};

// Reads distinct aligned chunks from `chunks` (their dst ignored) at depths 1, 2, 4 ... max_depth,
// `per_depth` chunks each, and picks the best depth. Chunks are used once each, so a cache in front
// of the disk cannot serve a repeat; with fewer chunks than needed the deeper steps are skipped.
QueueDepthProbe probe_queue_depth(const std::vector<ReadJob>& chunks, uint64_t chunk_bytes, bool use_io_uring,
                                  int max_depth = 64, int per_depth = 32);

}  // namespace deltafin
