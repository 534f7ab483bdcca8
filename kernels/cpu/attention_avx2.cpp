// AVX2 attention helpers (scores, weighted sums, the MLA absorb). Built without FMA and with -ffp-contract=off: every product is rounded
// before it is added, as in the plain loops (gemm_scalar.cpp), so the bits are the same.
#include <immintrin.h>

#include <cstring>

#include "cpu/gemm.h"

namespace deltafin::kernels::avx2 {

// Eight positions at a time, one per lane: 8 x 8 blocks of their rows are transposed so that
// lane k adds q[j] * rows[k][j] for j in order, as the plain loop does.
void dot_rows(const float* q, int64_t n, const float* const* rows, int64_t offset, int64_t count, float* out) {
  int64_t k0 = 0;
  for (; k0 + 8 <= count; k0 += 8) {
    const float* r[8];
    for (int k = 0; k < 8; ++k) r[k] = rows[k0 + k] + offset;
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      __m256 v[8];
      for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(r[k] + j);
      // Transpose: afterwards v[i] holds column j + i of the eight rows.
      const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
      const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
      const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
      const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      const __m256 c[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                           _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                           _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                           _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
      for (int i = 0; i < 8; ++i) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(q[j + i]), c[i]));
    }
    for (; j < n; ++j) {
      const __m256 col = _mm256_setr_ps(r[0][j], r[1][j], r[2][j], r[3][j], r[4][j], r[5][j], r[6][j], r[7][j]);
      acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(q[j]), col));
    }
    _mm256_storeu_ps(out + k0, acc);
  }
  for (; k0 < count; ++k0) {
    const float* r = rows[k0] + offset;
    float a = 0.f;
    for (int64_t j = 0; j < n; ++j) a += q[j] * r[j];
    out[k0] = a;
  }
}

void axpy(float a, const float* x, int64_t n, float* y) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_loadu_ps(y + j), _mm256_mul_ps(av, _mm256_loadu_ps(x + j))));
  for (; j < n; ++j) y[j] += a * x[j];
}

void axpy_bf16(float a, const void* x, int64_t n, float* y) {
  const auto* p = static_cast<const uint8_t*>(x);
  const __m256 av = _mm256_set1_ps(a);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * j));
    const __m256 xv = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_loadu_ps(y + j), _mm256_mul_ps(av, xv)));
  }
  for (; j < n; ++j) {
    uint16_t v;
    std::memcpy(&v, p + 2 * j, 2);
    const uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    y[j] += a * f;
  }
}

}  // namespace deltafin::kernels::avx2
