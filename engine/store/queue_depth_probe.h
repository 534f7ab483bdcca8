#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/read_engine.h"

namespace deltafin {

// The read queue depth a disk wants: bandwidth rises with reads in flight until the device is
// saturated. Past that point more in flight costs no bytes (guesses keep at most
// StoreOptions::guess_chunks_in_flight of the queue, so the rest is demand reads, all of them
// needed), while a pick below it costs rate: a short probe of a cloud disk can see one read at a
// time as fast as sixteen (the H100 host's probe: QD 1 2.76 GB/s, QD 16 2.37) where decode at QD 1
// then read at 0.77-0.92 of the QD 16 rate. So the pick is the deepest depth within 5 % of the
// fastest, not the shallowest.
struct QueueDepthProbe {
  int best = 16;                             // the deepest depth within 5 % of the fastest
  std::vector<std::pair<int, double>> gbps;  // (depth, GB/s), the faster of two measurements
  std::string describe() const;              // "QD 1 0.41, 2 0.80, ... GB/s"
};

// Fills `best` from `gbps` (empty: the usual depth, 16).
void choose_queue_depth(QueueDepthProbe& p);

// Reads distinct aligned chunks from `chunks` (their dst ignored) at depths 1, 2, 4 ... max_depth,
// then again from max_depth down to 1, `per_depth` chunks (at least twice the depth) each time, and
// keeps each depth's faster pass: a one-off stall or the disk's warm-up at the first depth would
// otherwise pick the depth at random. Chunks are used once each, so a cache in front of the disk
// cannot serve a repeat; with fewer chunks than both passes need the deeper depths are skipped.
QueueDepthProbe probe_queue_depth(const std::vector<ReadJob>& chunks, uint64_t chunk_bytes, bool use_io_uring,
                                  int max_depth = 64, int per_depth = 32);

}  // namespace deltafin
