// AVX2 attention helpers (scores, weighted sums, the MLA absorb), in fp64. Built without FMA and
// with -ffp-contract=off: every product is rounded before it is added, as in the plain loops
// (gemm_scalar.cpp), so the bits are the same.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "cpu/gemm.h"

namespace deltafin::kernels::avx2 {

namespace {

// v[i] becomes column i of the 8 x 8 block whose rows were v[0..7].
inline void transpose8(__m256 (&v)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  v[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  v[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  v[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  v[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  v[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  v[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  v[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  v[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// NQ queries against eight positions: each transposed block serves every query. Lane k of the
// two accumulators (positions 0-3, 4-7) adds q[j] * rows[k][j] for j in order, as the plain loop.
template <int NQ>
void dot8(const float* q, int64_t ldq, int64_t n, const float* const (&r)[8], double* out, int64_t ldo) {
  __m256d lo[NQ], hi[NQ];
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) lo[i] = hi[i] = _mm256_setzero_pd();
  auto add_column = [&](int64_t j, __m256 col) {
    const __m256d cl = _mm256_cvtps_pd(_mm256_castps256_ps128(col)),
                  ch = _mm256_cvtps_pd(_mm256_extractf128_ps(col, 1));
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) {
      const __m256d qv = _mm256_set1_pd(double(q[i * ldq + j]));
      lo[i] = _mm256_add_pd(lo[i], _mm256_mul_pd(qv, cl));
      hi[i] = _mm256_add_pd(hi[i], _mm256_mul_pd(qv, ch));
    }
  };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v[8];
    for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(r[k] + j);
    transpose8(v);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) add_column(j + c, v[c]);
  }
  for (; j < n; ++j)
    add_column(j, _mm256_setr_ps(r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j], r[6][j], r[7][j]));
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
    _mm256_storeu_pd(out + i * ldo, lo[i]);
    _mm256_storeu_pd(out + i * ldo + 4, hi[i]);
  }
}

// v[i] becomes column i of the 4 x 4 block of doubles whose rows were v[0..3].
inline void transpose4(__m256d (&v)[4]) {
  const __m256d t0 = _mm256_unpacklo_pd(v[0], v[1]), t1 = _mm256_unpackhi_pd(v[0], v[1]);
  const __m256d t2 = _mm256_unpacklo_pd(v[2], v[3]), t3 = _mm256_unpackhi_pd(v[2], v[3]);
  v[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
  v[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  v[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
  v[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

// NQ fp64 queries against four positions, lane k adding q[j] * rows[k][j] for j in order (each
// product rounded, then added: the plain loop's bits).
template <int NQ>
void dot4_64(const double* q, int64_t ldq, int64_t n, const double* const (&r)[4], double* out, int64_t ldo) {
  __m256d acc[NQ];
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) acc[i] = _mm256_setzero_pd();
  auto add_column = [&](int64_t j, __m256d col) {
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) acc[i] = _mm256_add_pd(acc[i], _mm256_mul_pd(_mm256_set1_pd(q[i * ldq + j]), col));
  };
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m256d v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_pd(r[k] + j);
    transpose4(v);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) add_column(j + c, v[c]);
  }
  for (; j < n; ++j) add_column(j, _mm256_setr_pd(r[0][j], r[1][j], r[2][j], r[3][j]));
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) _mm256_storeu_pd(out + i * ldo, acc[i]);
}

// Positions kBlock at a time, up to four queries per pass over them (block<NQ> adds one group);
// the positions left over, and so any count, by the plain loop: every output has the plain loop's
// bits whatever the count.
template <int kBlock, class E, class Block>
void dot_rows_blocked(const E* q, int64_t ldq, int nq, int64_t n, const E* const* rows, int64_t offset, int64_t count,
                      double* out, int64_t ldo, Block block) {
  int64_t k0 = 0;
  for (; k0 + kBlock <= count; k0 += kBlock) {
    const E* r[kBlock];
    for (int k = 0; k < kBlock; ++k) r[k] = rows[k0 + k] + offset;
    for (int i = 0; i < nq; i += 4) {
      const E* qi = q + i * ldq;
      double* oi = out + i * ldo + k0;
      switch (std::min(4, nq - i)) {
        case 4:
          block.template operator()<4>(qi, ldq, n, r, oi, ldo);
          break;
        case 3:
          block.template operator()<3>(qi, ldq, n, r, oi, ldo);
          break;
        case 2:
          block.template operator()<2>(qi, ldq, n, r, oi, ldo);
          break;
        default:
          block.template operator()<1>(qi, ldq, n, r, oi, ldo);
          break;
      }
    }
  }
  for (; k0 < count; ++k0) {
    const E* r = rows[k0] + offset;
    for (int i = 0; i < nq; ++i) {
      double a = 0;
      for (int64_t j = 0; j < n; ++j) a += double(q[i * ldq + j]) * double(r[j]);
      out[i * ldo + k0] = a;
    }
  }
}

}  // namespace

// Four positions at a time, one per lane (4 x 4 blocks of doubles transposed).
void dot_rows64(const double* q, int64_t ldq, int nq, int64_t n, const double* const* rows, int64_t offset,
                int64_t count, double* out, int64_t ldo) {
  dot_rows_blocked<4>(q, ldq, nq, n, rows, offset, count, out, ldo,
                      []<int NQ>(const auto&... a) { dot4_64<NQ>(a...); });
}

void axpy64(double a, const double* x, int64_t n, double* y) {
  const __m256d av = _mm256_set1_pd(a);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    _mm256_storeu_pd(y + j, _mm256_add_pd(_mm256_loadu_pd(y + j), _mm256_mul_pd(av, _mm256_loadu_pd(x + j))));
  for (; j < n; ++j) y[j] += a * x[j];
}

// Eight positions at a time, one per lane, up to four queries per pass over them: 8 x 8 blocks of
// the rows are transposed so that lane k adds q[j] * rows[k][j] for j in order, as the plain
// loop does. fp32 x fp32 products are exact in fp64, so the multiply rounds nothing.
void dot_rows(const float* q, int64_t ldq, int nq, int64_t n, const float* const* rows, int64_t offset, int64_t count,
              double* out, int64_t ldo) {
  dot_rows_blocked<8>(q, ldq, nq, n, rows, offset, count, out, ldo, []<int NQ>(const auto&... a) { dot8<NQ>(a...); });
}

void axpy(double a, const float* x, int64_t n, double* y) {
  const __m256d av = _mm256_set1_pd(a);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    _mm256_storeu_pd(y + j,
                     _mm256_add_pd(_mm256_loadu_pd(y + j), _mm256_mul_pd(av, _mm256_cvtps_pd(_mm_loadu_ps(x + j)))));
  for (; j < n; ++j) y[j] += a * double(x[j]);
}

void axpy_bf16(double a, const void* x, int64_t n, double* y) {
  const auto* p = static_cast<const uint8_t*>(x);
  const __m256d av = _mm256_set1_pd(a);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * j));
    const __m256 xv = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(xv)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
    _mm256_storeu_pd(y + j, _mm256_add_pd(_mm256_loadu_pd(y + j), _mm256_mul_pd(av, lo)));
    _mm256_storeu_pd(y + j + 4, _mm256_add_pd(_mm256_loadu_pd(y + j + 4), _mm256_mul_pd(av, hi)));
  }
  for (; j < n; ++j) {
    uint16_t v;
    std::memcpy(&v, p + 2 * j, 2);
    const uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    y[j] += a * double(f);
  }
}

}  // namespace deltafin::kernels::avx2
