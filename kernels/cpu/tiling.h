#pragma once
// How the fast paths walk a call: output rows [o0, o1) in tiles of kO (the last ones alone) and
// input rows [0, T) in tiles of kR (the last 1-3 rows in one smaller tile). A tile's shape never
// changes what an output computes, only how many loads it shares.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace deltafin::kernels {

// tile: a lambda template<int O, int R>(int64_t o, int t) computing outputs o..o+O-1 for input
// rows t..t+R-1.
template <int kO, int kR, class Tile>
inline void for_each_tile(int64_t o0, int64_t o1, int T, Tile&& tile) {
  static_assert(kO >= 1 && kR >= 1 && kR <= 4, "the remainder of the rows is at most 3");
  auto rows = [&]<int O>(int64_t o) {
    int t = 0;
    for (; t + kR <= T; t += kR) tile.template operator()<O, kR>(o, t);
    switch (T - t) {
      case 3:
        if constexpr (kR > 3) tile.template operator()<O, 3>(o, t);
        break;
      case 2:
        if constexpr (kR > 2) tile.template operator()<O, 2>(o, t);
        break;
      case 1:
        tile.template operator()<O, 1>(o, t);
        break;
      default:
        break;
    }
  };
  int64_t o = o0;
  for (; o + kO <= o1; o += kO) rows.template operator()<kO>(o);
  for (; o < o1; ++o) rows.template operator()<1>(o);
}

// n doubles of this thread's scratch, 64-byte aligned (rows and blocks of the widened inputs are
// multiples of 256 bytes, so no load splits a cache line). Valid until the thread's next call.
inline double* aligned_scratch(size_t n) {
  thread_local std::vector<double> buf;
  buf.resize(n + 8);
  return buf.data() + ((64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64) / sizeof(double);
}

// x [T][ldx] widened exactly to fp64 (times `scale`, a power of two) as [T][in] in this thread's
// scratch.
inline double* widened_inputs(const float* x, int64_t ldx, int T, int64_t in, double scale = 1.0) {
  double* xd = aligned_scratch(size_t(T) * in);
  for (int t = 0; t < T; ++t)
    for (int64_t i = 0; i < in; ++i) xd[t * in + i] = double(x[t * ldx + i]) * scale;
  return xd;
}

// The same from fp64 inputs (times `scale`, a power of two: exact).
inline double* widened_inputs(const double* x, int64_t ldx, int T, int64_t in, double scale = 1.0) {
  double* xd = aligned_scratch(size_t(T) * in);
  for (int t = 0; t < T; ++t)
    for (int64_t i = 0; i < in; ++i) xd[t * in + i] = x[t * ldx + i] * scale;
  return xd;
}

// A call's inputs in fp64 (x widened, or xd scaled) as [T][in] in this thread's scratch.
template <class Args>
inline double* call_inputs(const Args& a, double scale = 1.0) {
  return a.xd ? widened_inputs(a.xd, a.ldx, a.T, a.in, scale) : widened_inputs(a.x, a.ldx, a.T, a.in, scale);
}

// Runs f with the call's output base for column o of row t: the fp64 outputs when set, else fp32.
template <class Args, class F>
inline void with_output(const Args& a, int64_t o, int t, F&& f) {
  if (a.yd) f(a.yd + t * a.ldy + o);
  else f(a.y + t * a.ldy + o);
}

}  // namespace deltafin::kernels
