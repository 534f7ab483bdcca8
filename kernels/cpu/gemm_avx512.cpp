// AVX-512 paths (F + BW + VL). Same tiling contract as the AVX2 file.
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

inline __m512 widen_bf16(const uint8_t* p) {
  __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

inline float hsum(__m512 v) {
  __m256 lo = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}

// O consecutive output rows for R input rows: each input vector is loaded once for all O outputs
// (at T > 1 the inputs come from L2, and their loads were the bound). Every output keeps its own
// two accumulators and tail, so its sums are the same at any O and R.
template <int O, int R, bool BF16>
void dense_tile(const uint8_t* w, int64_t row_bytes, int64_t in, const float* x, int64_t ldx, float* y, int64_t ldy) {
  __m512 a0[O][R], a1[O][R];
  #pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a0[o][r] = a1[o][r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= in; i += 32) {
    __m512 w0[O], w1[O];
    #pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const uint8_t* row = w + o * row_bytes;
      if constexpr (BF16) {
        w0[o] = widen_bf16(row + 2 * i);
        w1[o] = widen_bf16(row + 2 * i + 32);
      } else {
        w0[o] = _mm512_loadu_ps(row + 4 * i);
        w1[o] = _mm512_loadu_ps(row + 4 * i + 64);
      }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 x0 = _mm512_loadu_ps(x + r * ldx + i), x1 = _mm512_loadu_ps(x + r * ldx + i + 16);
      #pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        a0[o][r] = _mm512_fmadd_ps(w0[o], x0, a0[o][r]);
        a1[o][r] = _mm512_fmadd_ps(w1[o], x1, a1[o][r]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int o = 0; o < O; ++o) {
    const uint8_t* row = w + o * row_bytes;
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float s = hsum(_mm512_add_ps(a0[o][r], a1[o][r]));
      for (int64_t j = i; j < in; ++j) {
        float wv;
        if constexpr (BF16) {
          uint16_t v;
          std::memcpy(&v, row + 2 * j, 2);
          uint32_t bits = static_cast<uint32_t>(v) << 16;
          std::memcpy(&wv, &bits, 4);
        } else {
          std::memcpy(&wv, row + 4 * j, 4);
        }
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

// Each 32-column block becomes [even 0..30][odd 1..31], the order of low and high nibbles.
void permute_inputs(const float* x, int64_t in, float* xp) {
  for (int64_t b = 0; b < in; b += 32)
    for (int j = 0; j < 16; ++j) {
      xp[b + j] = x[b + 2 * j];
      xp[b + 16 + j] = x[b + 2 * j + 1];
    }
}

// O consecutive output rows for R input rows: each input load serves O outputs, and their
// accumulator chains run side by side. Each output's products and sums are as with O = R = 1.
template <int O, int R>
void mxfp4_tile(const uint8_t* w, const uint8_t* scale, int64_t in, const float* xp, int64_t ldxp, float* y, int64_t ldy) {
  // Codes look up twice their value in a 16-entry table (one lane permute per 16 codes); the
  // block scale comes halved, so every product and sum keeps its bits.
  const __m512 lut = _mm512_setr_ps(0.f, 1.f, 2.f, 3.f, 4.f, 6.f, 8.f, 12.f, -0.f, -1.f, -2.f, -3.f, -4.f, -6.f, -8.f, -12.f);
  const __m512i nib = _mm512_set1_epi32(15);
  const int64_t blocks = in / 32;
  __m512 acc[O][R];
  #pragma GCC unroll 8
  for (int o = 0; o < O; ++o)
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[o][r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512 lo[O], hi[O], s[O];
    #pragma GCC unroll 8
    for (int o = 0; o < O; ++o) {
      const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + o * (in / 2) + 16 * b)));
      lo[o] = _mm512_permutexvar_ps(_mm512_and_si512(v, nib), lut);
      hi[o] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), lut);
      s[o] = _mm512_set1_ps(kHalfE8M0[scale[o * blocks + b]]);
    }
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float* xb = xp + r * ldxp + 32 * b;
      const __m512 x0 = _mm512_load_ps(xb), x1 = _mm512_load_ps(xb + 16);
      #pragma GCC unroll 8
      for (int o = 0; o < O; ++o) {
        __m512 p = _mm512_mul_ps(lo[o], x0);
        p = _mm512_fmadd_ps(hi[o], x1, p);
        acc[o][r] = _mm512_fmadd_ps(p, s[o], acc[o][r]);
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

}  // namespace deltafin::kernels::avx512
