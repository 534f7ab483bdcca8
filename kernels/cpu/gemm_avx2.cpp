// AVX2 + FMA paths. Rows are processed in tiles; the operations applied to one row never depend
// on the tile it sits in. Inputs are widened to fp64 once per call; weights are widened exactly
// inside the loop and every product is exact in fp64, so the fused multiply-adds round only the
// sums.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/tiling.h"

namespace deltafin::kernels::avx2 {

namespace {

// Dense tiles: kO output rows share each input load, kR input rows each weight load.
constexpr int kO = 2, kR = 2;
// MXFP4 tiles: one output row (its 32 decoded weights of a block fill half the registers) by kMR
// input rows.
constexpr int kMO = 1, kMR = 4;
// How far ahead of its loads each weight row asks for its next lines (software prefetch).
constexpr int64_t kPrefetchBytes = 1024;

inline double hsum(__m256d v) {
  __m128d b = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  b = _mm_add_sd(b, _mm_unpackhi_pd(b, b));
  return _mm_cvtsd_f64(b);
}

// 8 weights as two vectors of 4 doubles.
inline void widen_bf16(const uint8_t* p, __m256d& lo, __m256d& hi) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256 f = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
  hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}

inline void widen_f32(const uint8_t* p, __m256d& lo, __m256d& hi) {
  lo = _mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(p)));
  hi = _mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(p) + 4));
}

inline float bf16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// O consecutive output rows for R input rows: each input vector is loaded once for all O outputs
// (at T > 1 the inputs come from L2, and their loads were the bound). Every output keeps its own
// two accumulators and tail, so its sums are the same at any O and R.
template <int O, int R, bool BF16, class Y>
void dense_tile(const uint8_t* w, int64_t row_bytes, int64_t in, const double* x, int64_t ldx, Y* y, int64_t ldy) {
  __m256d a0[O][R], a1[O][R];
#pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a0[o][r] = a1[o][r] = _mm256_setzero_pd();
  // One step: 8 columns from i, lanes 0-3 into a0 and 4-7 into a1 of every (output, row).
  auto step = [&](int64_t i) __attribute__((always_inline)) {
    __m256d w0[O], w1[O];
#pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const uint8_t* row = w + o * row_bytes;
      if constexpr (BF16) widen_bf16(row + 2 * i, w0[o], w1[o]);
      else widen_f32(row + 4 * i, w0[o], w1[o]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256d x0 = _mm256_loadu_pd(x + r * ldx + i), x1 = _mm256_loadu_pd(x + r * ldx + i + 4);
#pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        a0[o][r] = _mm256_fmadd_pd(w0[o], x0, a0[o][r]);
        a1[o][r] = _mm256_fmadd_pd(w1[o], x1, a1[o][r]);
      }
    }
  };
  // Four steps per cache line of BF16 weights, each row's line kPrefetchBytes ahead asked for
  // first (the fp64 work per byte leaves too few loads in flight otherwise).
  int64_t i = 0;
  for (; i + 32 <= in; i += 32) {
#pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const char* line = reinterpret_cast<const char*>(w + o * row_bytes + (BF16 ? 2 : 4) * i) + kPrefetchBytes;
      _mm_prefetch(line, _MM_HINT_T0);
      if constexpr (!BF16) _mm_prefetch(line + 64, _MM_HINT_T0);
    }
    step(i);
    step(i + 8);
    step(i + 16);
    step(i + 24);
  }
  for (; i + 8 <= in; i += 8) step(i);
#pragma GCC unroll 8
  for (int o = 0; o < O; ++o) {
    const uint8_t* row = w + o * row_bytes;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      double s = hsum(_mm256_add_pd(a0[o][r], a1[o][r]));
      for (int64_t j = i; j < in; ++j) {
        float wv;
        if constexpr (BF16) wv = bf16_at(row + 2 * j);
        else std::memcpy(&wv, row + 4 * j, 4);
        s = std::fma(double(wv), x[r * ldx + j], s);
      }
      y[r * ldy + o] = Y(s);
    }
  }
}

template <bool BF16>
void dense_rows(const RowsArgs& a) {
  const auto* w = static_cast<const uint8_t*>(a.w);
  const int64_t row_bytes = a.in * (BF16 ? 2 : 4);
  const double* xd = call_inputs(a);
  for_each_tile<kO, kR>(a.o0, a.o1, a.T, [&]<int O, int R>(int64_t o, int t) {
    with_output(a, o, t, [&](auto* y) {
      dense_tile<O, R, BF16>(w + o * row_bytes, row_bytes, a.in, xd + t * a.in, a.in, y, a.ldy);
    });
  });
}

// Inputs are regrouped once per call, widened to fp64, so that each 32-column block reads
// [even 0..14][odd 1..15][even 16..30][odd 17..31], matching the nibble order.
template <class X>
void widen_permuted(const X* x, int64_t in, double* xp) {
  for (int64_t b = 0; b < in; b += 32)
    for (int j = 0; j < 8; ++j) {
      xp[b + j] = x[b + 2 * j];
      xp[b + 8 + j] = x[b + 2 * j + 1];
      xp[b + 16 + j] = x[b + 16 + 2 * j];
      xp[b + 24 + j] = x[b + 16 + 2 * j + 1];
    }
}

// Four int8 lanes starting at byte 4 * k of v, as doubles.
template <int k>
inline __m256d quad(__m128i v) {
  return _mm256_cvtepi32_pd(_mm_cvtepi8_epi32(_mm_srli_si128(v, 4 * k)));
}

// O consecutive output rows for R input rows (each input load serves O outputs); each output's
// products and sums are as with O = R = 1.
template <int O, int R, class Y>
void mxfp4_tile(const uint8_t* w, const uint8_t* scale, int64_t in, const double* xp, int64_t ldxp, Y* y, int64_t ldy) {
  // Codes decode to twice their E2M1 value as int8 (one byte shuffle per 16 codes, then an exact
  // int -> double conversion); the halving moves into the block scale, a power of two. A block's
  // products are exact in fp64 and its sum is scaled exactly.
  const __m128i twice = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
  const __m128i nib = _mm_set1_epi8(15);
  const int64_t blocks = in / 32;
  __m256d acc[O][R];
#pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[o][r] = _mm256_setzero_pd();
  for (int64_t b = 0; b < blocks; ++b) {
    __m256d d[O][8], s[O];
#pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const uint8_t* p = w + o * (in / 2) + 16 * b;
      // Once per 64-byte line of codes (4 blocks): the line 2 KB ahead, as in the dense tiles.
      if ((b & 3) == 0) _mm_prefetch(reinterpret_cast<const char*>(p) + 2 * kPrefetchBytes, _MM_HINT_T0);
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i lo = _mm_shuffle_epi8(twice, _mm_and_si128(bytes, nib));
      const __m128i hi = _mm_shuffle_epi8(twice, _mm_and_si128(_mm_srli_epi16(bytes, 4), nib));
      // [even 0..14][odd 1..15][even 16..30][odd 17..31], four columns per vector.
      d[o][0] = quad<0>(lo);
      d[o][1] = quad<1>(lo);
      d[o][2] = quad<0>(hi);
      d[o][3] = quad<1>(hi);
      d[o][4] = quad<2>(lo);
      d[o][5] = quad<3>(lo);
      d[o][6] = quad<2>(hi);
      d[o][7] = quad<3>(hi);
      s[o] = _mm256_set1_pd(kHalfE8M0d[scale[o * blocks + b]]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const double* xb = xp + r * ldxp + 32 * b;
#pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        __m256d p = _mm256_mul_pd(d[o][0], _mm256_load_pd(xb));
#pragma GCC unroll 8
        for (int k = 1; k < 8; ++k) p = _mm256_fmadd_pd(d[o][k], _mm256_load_pd(xb + 4 * k), p);
        acc[o][r] = _mm256_fmadd_pd(p, s[o], acc[o][r]);
      }
    }
  }
#pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r * ldy + o] = Y(hsum(acc[o][r]));
}

}  // namespace

void bf16_rows(const RowsArgs& a) { dense_rows<true>(a); }
void f32_rows(const RowsArgs& a) { dense_rows<false>(a); }

void mxfp4_rows(const RowsArgs& a) {
  double* xp = aligned_scratch(static_cast<size_t>(a.T) * a.in);
  for (int t = 0; t < a.T; ++t)
    if (a.xd) widen_permuted(a.xd + t * a.ldx, a.in, xp + t * a.in);
    else widen_permuted(a.x + t * a.ldx, a.in, xp + t * a.in);
  const auto* w = static_cast<const uint8_t*>(a.w);
  const int64_t blocks = a.in / 32;
  for_each_tile<kMO, kMR>(a.o0, a.o1, a.T, [&]<int O, int R>(int64_t o, int t) {
    with_output(a, o, t, [&](auto* y) {
      mxfp4_tile<O, R>(w + o * (a.in / 2), a.scale + o * blocks, a.in, xp + t * a.in, a.in, y, a.ldy);
    });
  });
}

}  // namespace deltafin::kernels::avx2
