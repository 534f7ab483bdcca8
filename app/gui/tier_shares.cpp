#include "tier_shares.h"

#include <algorithm>

namespace deltafin::gui {

TierShares tierShares(const CacheCounters& c) {
  TierShares t;
  t.lookups = c.requests;
  quint64 left = c.requests;
  auto take = [&left](quint64 count) {
    const quint64 n = std::min(count, left);
    left -= n;
    return n;
  };
  t.vram = c.hasVram ? take(c.vramHits) : 0;
  t.ram = take(c.ramHits);
  t.network = take(c.netFetches);
  // A fetched expert is also counted as a disk read; only the reads beyond the fetches came from disk alone.
  t.disk = take(c.diskReads > c.netFetches ? c.diskReads - c.netFetches : 0);
  return t;
}

}  // namespace deltafin::gui
