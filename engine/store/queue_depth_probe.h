#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "store/read_engine.h"

namespace deltafin {

// The read queue depth a disk wants: bandwidth rises with reads in flight until the device is
// saturated, and a pick below that point costs rate. The probe's short passes can misjudge shallow
// depths: on the H100 host's cloud disk three processes' probes rated QD 1 the fastest (2.76 against
// QD 16's 2.37 GB/s; 2.27 against 1.91; 1.65 against 1.44). So the pick is the deepest depth within
// 5 % of the fastest, and never below kMinQueueDepth: insurance for a disk whose rate does rise with
// depth. Its measured price on that host (docs/PERFORMANCE.md): decode read as fast at QD 8 as at QD 1 within
// the disk's drift, and 2-3 % more bytes, since guesses (StoreOptions::guess_chunks_in_flight, then 4)
// kept up to 4 reads in flight where QD 1 allows one.
constexpr int kMinQueueDepth = 8;
constexpr int kUsualQueueDepth = 16;  // the pick when nothing was measured
struct QueueDepthProbe {
  int best = kUsualQueueDepth;               // the deepest depth within 5 % of the fastest, >= kMinQueueDepth
  std::vector<std::pair<int, double>> gbps;  // (depth, GB/s), the faster of two measurements
  std::string describe() const;              // "QD 1 0.41, 2 0.80, ... GB/s"
};

// Fills `best` from `gbps` (empty: kUsualQueueDepth; never below kMinQueueDepth).
void choose_queue_depth(QueueDepthProbe& p);

// Reads distinct aligned chunks from `chunks` (their dst ignored) at depths 1, 2, 4 ... max_depth,
// then again from max_depth down to 1, `per_depth` chunks (at least twice the depth) each time, and
// keeps each depth's faster pass: a one-off stall or the disk's warm-up at the first depth would
// otherwise pick the depth at random. Chunks are used once each, so a cache in front of the disk
// cannot serve a repeat; with fewer chunks than both passes need the deeper depths are skipped.
// The defaults are the expert store's probe (best_queue_depth).
constexpr int kProbeMaxDepth = 32, kProbePerDepth = 32;
QueueDepthProbe probe_queue_depth(const std::vector<ReadJob>& chunks, uint64_t chunk_bytes, bool use_io_uring,
                                  int max_depth = kProbeMaxDepth, int per_depth = kProbePerDepth);

// The chunks probe_queue_depth reads to measure every depth up to max_depth in both passes.
size_t queue_depth_probe_chunks(int max_depth = kProbeMaxDepth, int per_depth = kProbePerDepth);

}  // namespace deltafin
