#pragma once
// Error accumulators that keep a NaN. `std::max(worst, e)` drops a NaN error (every comparison
// with NaN is false), so a result full of NaN would report a worst error of 0 and pass. Qt-free:
// the GPU check tools share it.
#include <cmath>
#include <cstring>

namespace deltafin::test {

// The larger of the two; a NaN on either side wins and stays.
inline double worst_of(double worst, double e) {
  if (std::isnan(worst)) return worst;
  return std::isnan(e) || e > worst ? e : worst;
}

// Bit equality: what "exact" means for a result (QCOMPARE on floats is fuzzy: it passes values a
// few ulps apart).
inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace deltafin::test
