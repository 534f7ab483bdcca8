// AVX-512 paths (F + BW + VL). Same tiling contract as the AVX2 file. Inputs are widened to fp64
// once per call; weights are widened exactly inside the loop and every product is exact in fp64,
// so the fused multiply-adds round only the sums.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/tiling.h"

namespace deltafin::kernels::avx512 {

namespace {

// Dense tiles: kO output rows share each input load, kR input rows each weight load.
constexpr int kO = 4, kR = 2;
// MXFP4 tiles: kMO output rows by kMR input rows.
constexpr int kMO = 2, kMR = 4;
// How far ahead of its loads each weight row asks for its next lines (software prefetch).
constexpr int64_t kPrefetchBytes = 1024;

// BF16 weights as doubles without a conversion: the 16 bits, sign-extended and shifted to bits
// 45-60 with bits 60-62 cleared, are the double w * 2^-896 exactly (the BF16 exponent lands in the
// low 8 bits of the double's, zero and subnormals included; BF16 infinities and NaNs, which no
// checkpoint holds, would become finite). The inputs are widened times 2^448, so every product is
// w x 2^-448: exact and far from fp64's overflow and underflow for any fp32 x and BF16 w, and the
// sum is scaled back by 2^448 exactly. One shift and one mask per 8 weights instead of a widening
// to fp32 and two conversions (faster in cache on Zen 5: PERFORMANCE.md, "Precision").
constexpr double kBf16InputScale = 0x1p448;
constexpr int kBf16ResultExp = 448;

inline void widen_bf16(const uint8_t* p, __m512d& lo, __m512d& hi) {
  const __m512i keep = _mm512_set1_epi64(int64_t(0x8FFFFFFFFFFFFFFFull));
  lo = _mm512_castsi512_pd(_mm512_and_si512(
      _mm512_slli_epi64(_mm512_cvtepi16_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 45), keep));
  hi = _mm512_castsi512_pd(_mm512_and_si512(
      _mm512_slli_epi64(_mm512_cvtepi16_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16))), 45), keep));
}

inline void widen_f32(const uint8_t* p, __m512d& lo, __m512d& hi) {
  lo = _mm512_cvtps_pd(_mm256_loadu_ps(reinterpret_cast<const float*>(p)));
  hi = _mm512_cvtps_pd(_mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8));
}

inline double hsum(__m512d v) {
  const __m256d a = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
  __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  b = _mm_add_sd(b, _mm_unpackhi_pd(b, b));
  return _mm_cvtsd_f64(b);
}

// O consecutive output rows for R input rows: each input vector is loaded once for all O outputs
// (at T > 1 the inputs come from L2, and their loads were the bound). Every output keeps its own
// two accumulators and tail, so its sums are the same at any O and R.
template <int O, int R, bool BF16, class Y>
void dense_tile(const uint8_t* w, int64_t row_bytes, int64_t in, const double* x, int64_t ldx, Y* y, int64_t ldy) {
  __m512d a0[O][R], a1[O][R];
#pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a0[o][r] = a1[o][r] = _mm512_setzero_pd();
  // One step: 16 columns from i, lanes 0-7 into a0 and 8-15 into a1 of every (output, row).
  auto step = [&](int64_t i) __attribute__((always_inline)) {
    __m512d w0[O], w1[O];
#pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const uint8_t* row = w + o * row_bytes;
      if constexpr (BF16) widen_bf16(row + 2 * i, w0[o], w1[o]);
      else widen_f32(row + 4 * i, w0[o], w1[o]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512d x0 = _mm512_loadu_pd(x + r * ldx + i), x1 = _mm512_loadu_pd(x + r * ldx + i + 8);
#pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        a0[o][r] = _mm512_fmadd_pd(w0[o], x0, a0[o][r]);
        a1[o][r] = _mm512_fmadd_pd(w1[o], x1, a1[o][r]);
      }
    }
  };
  // Two steps per cache line of BF16 weights, each row's line kPrefetchBytes ahead asked for first:
  // with the fp64 work per byte the core's own window no longer keeps enough loads in flight
  // (without it a T=1 pass from DRAM took twice as long: PERFORMANCE.md, "Precision").
  int64_t i = 0;
  for (; i + 32 <= in; i += 32) {
#pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const char* line = reinterpret_cast<const char*>(w + o * row_bytes + (BF16 ? 2 : 4) * i) + kPrefetchBytes;
      _mm_prefetch(line, _MM_HINT_T0);
      if constexpr (!BF16) _mm_prefetch(line + 64, _MM_HINT_T0);
    }
    step(i);
    step(i + 16);
  }
  if (i + 16 <= in) {
    step(i);
    i += 16;
  }
#pragma GCC unroll 8
  for (int o = 0; o < O; ++o) {
    const uint8_t* row = w + o * row_bytes;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      double s = hsum(_mm512_add_pd(a0[o][r], a1[o][r]));
      for (int64_t j = i; j < in; ++j) {
        float wv;
        if constexpr (BF16) {
          uint16_t v;
          std::memcpy(&v, row + 2 * j, 2);
          uint32_t bits = static_cast<uint32_t>(v) << 16;
          std::memcpy(&wv, &bits, 4);
          s = std::fma(std::ldexp(double(wv), -896), x[r * ldx + j], s);
        } else {
          std::memcpy(&wv, row + 4 * j, 4);
          s = std::fma(double(wv), x[r * ldx + j], s);
        }
      }
      y[r * ldy + o] = Y(BF16 ? std::ldexp(s, kBf16ResultExp) : s);
    }
  }
}

template <bool BF16>
void dense_rows(const RowsArgs& a) {
  const auto* w = static_cast<const uint8_t*>(a.w);
  const int64_t row_bytes = a.in * (BF16 ? 2 : 4);
  const double* xd = call_inputs(a, BF16 ? kBf16InputScale : 1.0);
  for_each_tile<kO, kR>(a.o0, a.o1, a.T, [&]<int O, int R>(int64_t o, int t) {
    with_output(a, o, t, [&](auto* y) {
      dense_tile<O, R, BF16>(w + o * row_bytes, row_bytes, a.in, xd + t * a.in, a.in, y, a.ldy);
    });
  });
}

// Each 32-column block becomes [even 0..14][odd 1..15][even 16..30][odd 17..31] in fp64: the
// order in which the low and high nibbles of bytes 0-7, then 8-15, decode.
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

// O consecutive output rows for R input rows: each input load serves O outputs, and their
// accumulator chains run side by side. Each output's products and sums are as with O = R = 1.
template <int O, int R, class Y>
void mxfp4_tile(const uint8_t* w, const uint8_t* scale, int64_t in, const double* xp, int64_t ldxp, Y* y, int64_t ldy) {
  // Codes look up twice their value in a 16-entry table (the index's low four bits pick the entry,
  // so a byte indexes its low nibble as it is); the block scale comes halved. A block's products
  // are exact in fp64 and its sum is scaled by a power of two, exactly.
  const __m512d lut_pos = _mm512_setr_pd(0., 1., 2., 3., 4., 6., 8., 12.);
  const __m512d lut_neg = _mm512_setr_pd(-0., -1., -2., -3., -4., -6., -8., -12.);
  const int64_t blocks = in / 32;
  __m512d acc[O][R];
#pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[o][r] = _mm512_setzero_pd();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512d d0[O], d1[O], d2[O], d3[O], s[O];
#pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const uint8_t* p = w + o * (in / 2) + 16 * b;
      // Once per 64-byte line of codes (4 blocks): the line 2 KB ahead, as in the dense tiles.
      if ((b & 3) == 0) _mm_prefetch(reinterpret_cast<const char*>(p) + 2 * kPrefetchBytes, _MM_HINT_T0);
      const __m512i v0 = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
      const __m512i v1 = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)));
      d0[o] = _mm512_permutex2var_pd(lut_pos, v0, lut_neg);
      d1[o] = _mm512_permutex2var_pd(lut_pos, _mm512_srli_epi64(v0, 4), lut_neg);
      d2[o] = _mm512_permutex2var_pd(lut_pos, v1, lut_neg);
      d3[o] = _mm512_permutex2var_pd(lut_pos, _mm512_srli_epi64(v1, 4), lut_neg);
      s[o] = _mm512_set1_pd(kHalfE8M0d[scale[o * blocks + b]]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const double* xb = xp + r * ldxp + 32 * b;
      const __m512d x0 = _mm512_load_pd(xb), x1 = _mm512_load_pd(xb + 8), x2 = _mm512_load_pd(xb + 16),
                    x3 = _mm512_load_pd(xb + 24);
#pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        __m512d p = _mm512_mul_pd(d0[o], x0);
        p = _mm512_fmadd_pd(d1[o], x1, p);
        p = _mm512_fmadd_pd(d2[o], x2, p);
        p = _mm512_fmadd_pd(d3[o], x3, p);
        acc[o][r] = _mm512_fmadd_pd(p, s[o], acc[o][r]);
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

}  // namespace deltafin::kernels::avx512
