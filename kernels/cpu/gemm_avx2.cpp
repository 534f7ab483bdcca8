// AVX2 + FMA paths. Rows are processed in tiles of up to four; the operations
// applied to one row never depend on the tile it sits in.
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
// MXFP4 tiles: kMO output rows by kMR input rows.
constexpr int kMO = 2, kMR = 4;

inline float hsum(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

inline __m256 widen_bf16(const uint8_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
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
template <int O, int R, bool BF16>
void dense_tile(const uint8_t* w, int64_t row_bytes, int64_t in, const float* x, int64_t ldx, float* y, int64_t ldy) {
  __m256 a0[O][R], a1[O][R];
  #pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a0[o][r] = a1[o][r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= in; i += 16) {
    __m256 w0[O], w1[O];
    #pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const uint8_t* row = w + o * row_bytes;
      if constexpr (BF16) {
        w0[o] = widen_bf16(row + 2 * i);
        w1[o] = widen_bf16(row + 2 * i + 16);
      } else {
        w0[o] = _mm256_loadu_ps(reinterpret_cast<const float*>(row + 4 * i));
        w1[o] = _mm256_loadu_ps(reinterpret_cast<const float*>(row + 4 * i + 32));
      }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 x0 = _mm256_loadu_ps(x + r * ldx + i), x1 = _mm256_loadu_ps(x + r * ldx + i + 8);
      #pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        a0[o][r] = _mm256_fmadd_ps(w0[o], x0, a0[o][r]);
        a1[o][r] = _mm256_fmadd_ps(w1[o], x1, a1[o][r]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int o = 0; o < O; ++o) {
    const uint8_t* row = w + o * row_bytes;
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float s = hsum(_mm256_add_ps(a0[o][r], a1[o][r]));
      for (int64_t j = i; j < in; ++j) {
        float wv;
        if constexpr (BF16) wv = bf16_at(row + 2 * j);
        else std::memcpy(&wv, row + 4 * j, 4);
        s = std::fmaf(wv, x[r * ldx + j], s);
      }
      y[r * ldy + o] = s;
    }
  }
}

template <bool BF16>
void dense_rows(const RowsArgs& a) {
  const auto* w = static_cast<const uint8_t*>(a.w);
  const int64_t row_bytes = a.in * (BF16 ? 2 : 4);
  for_each_tile<kO, kR>(a.o0, a.o1, a.T, [&]<int O, int R>(int64_t o, int t) {
    dense_tile<O, R, BF16>(w + o * row_bytes, row_bytes, a.in, a.x + t * a.ldx, a.ldx, a.y + t * a.ldy + o, a.ldy);
  });
}

// Inputs are regrouped once per call so that each 32-column block reads
// [even 0..14][odd 1..15][even 16..30][odd 17..31], matching the nibble order.
void permute_inputs(const float* x, int64_t in, float* xp) {
  for (int64_t b = 0; b < in; b += 32)
    for (int j = 0; j < 8; ++j) {
      xp[b + j] = x[b + 2 * j];
      xp[b + 8 + j] = x[b + 2 * j + 1];
      xp[b + 16 + j] = x[b + 16 + 2 * j];
      xp[b + 24 + j] = x[b + 16 + 2 * j + 1];
    }
}

// O consecutive output rows for R input rows (each input load serves O outputs); each output's
// products and sums are as with O = R = 1.
template <int O, int R>
void mxfp4_tile(const uint8_t* w, const uint8_t* scale, int64_t in, const float* xp, int64_t ldxp, float* y, int64_t ldy) {
  // Codes decode to twice their E2M1 value as int8 (one byte shuffle per 16 codes, then an exact
  // int -> float conversion); the halving moves into the block scale, a power of two, so each
  // product and sum is the old one times two until the scale multiplies it back: the same bits as
  // decoding the values themselves (barring products below 2^-125).
  const __m128i twice = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
  const __m128i nib = _mm_set1_epi8(15);
  const int64_t blocks = in / 32;
  __m256 acc[O][R];
  #pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[o][r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m256 d0[O], d1[O], d2[O], d3[O], s[O];
    #pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + o * (in / 2) + 16 * b));
      const __m128i lo = _mm_shuffle_epi8(twice, _mm_and_si128(bytes, nib));
      const __m128i hi = _mm_shuffle_epi8(twice, _mm_and_si128(_mm_srli_epi16(bytes, 4), nib));
      d0[o] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
      d1[o] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
      d2[o] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(lo, lo)));
      d3[o] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(hi, hi)));
      s[o] = _mm256_broadcast_ss(&kHalfE8M0[scale[o * blocks + b]]);
    }
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float* xb = xp + r * ldxp + 32 * b;
      #pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        __m256 p = _mm256_mul_ps(d0[o], _mm256_load_ps(xb));
        p = _mm256_fmadd_ps(d1[o], _mm256_load_ps(xb + 8), p);
        p = _mm256_fmadd_ps(d2[o], _mm256_load_ps(xb + 16), p);
        p = _mm256_fmadd_ps(d3[o], _mm256_load_ps(xb + 24), p);
        acc[o][r] = _mm256_fmadd_ps(p, s[o], acc[o][r]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r * ldy + o] = hsum(acc[o][r]);
}

}  // namespace

void bf16_rows(const RowsArgs& a) { dense_rows<true>(a); }
void f32_rows(const RowsArgs& a) { dense_rows<false>(a); }

void mxfp4_rows(const RowsArgs& a) {
  float* xp = aligned_scratch(static_cast<size_t>(a.T) * a.in);
  for (int t = 0; t < a.T; ++t) permute_inputs(a.x + t * a.ldx, a.in, xp + t * a.in);
  const auto* w = static_cast<const uint8_t*>(a.w);
  const int64_t blocks = a.in / 32;
  for_each_tile<kMO, kMR>(a.o0, a.o1, a.T, [&]<int O, int R>(int64_t o, int t) {
    mxfp4_tile<O, R>(w + o * (a.in / 2), a.scale + o * blocks, a.in, xp + t * a.in, a.in, a.y + t * a.ldy + o, a.ldy);
  });
}

}  // namespace deltafin::kernels::avx2
