// The reference: plain sequential sums, the definition the fast paths are tested against.
// Every product of a weight (BF16, F32 or MXFP4) and an fp32 input is exact in fp64, so each
// output is its exact dot product summed in fp64 in index order, rounded once to fp32.
#include <cstring>

#include "cpu/gemm.h"

namespace deltafin::kernels::scalar {

// Input j of row t and the store of output o of row t, from and to fp64 when the call has them.
static inline double in_at(const RowsArgs& a, int t, int64_t j) {
  return a.xd ? a.xd[t * a.ldx + j] : double(a.x[t * a.ldx + j]);
}
static inline void store(const RowsArgs& a, int t, int64_t o, double v) {
  if (a.yd) a.yd[t * a.ldy + o] = v;
  else a.y[t * a.ldy + o] = float(v);
}

static inline float load_bf16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void bf16_rows(const RowsArgs& a) {
  const auto* w = static_cast<const uint8_t*>(a.w);
  for (int64_t o = a.o0; o < a.o1; ++o) {
    const uint8_t* row = w + o * a.in * 2;
    for (int t = 0; t < a.T; ++t) {
      double acc = 0;
      for (int64_t i = 0; i < a.in; ++i) acc += double(load_bf16(row + 2 * i)) * in_at(a, t, i);
      store(a, t, o, acc);
    }
  }
}

void f32_rows(const RowsArgs& a) {
  const auto* w = static_cast<const uint8_t*>(a.w);
  for (int64_t o = a.o0; o < a.o1; ++o) {
    const uint8_t* row = w + o * a.in * 4;
    for (int t = 0; t < a.T; ++t) {
      double acc = 0;
      for (int64_t i = 0; i < a.in; ++i) {
        float wv;
        std::memcpy(&wv, row + 4 * i, 4);
        acc += double(wv) * in_at(a, t, i);
      }
      store(a, t, o, acc);
    }
  }
}

void mxfp4_rows(const RowsArgs& a) {
  const auto* w = static_cast<const uint8_t*>(a.w);
  const int64_t blocks = a.in / 32;
  for (int64_t o = a.o0; o < a.o1; ++o) {
    const uint8_t* row = w + o * (a.in / 2);
    const uint8_t* srow = a.scale + o * blocks;
    for (int t = 0; t < a.T; ++t) {
      double acc = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        const double s = e8m0_to_float(srow[b]);
        for (int j = 0; j < 16; ++j) {
          const uint8_t byte = row[b * 16 + j];
          acc += double(kE2M1[byte & 15]) * s * in_at(a, t, b * 32 + 2 * j);
          acc += double(kE2M1[byte >> 4]) * s * in_at(a, t, b * 32 + 2 * j + 1);
        }
      }
      store(a, t, o, acc);
    }
  }
}

void dot_rows(const float* q, int64_t ldq, int nq, int64_t n, const float* const* rows, int64_t offset, int64_t count,
              double* out, int64_t ldo) {
  for (int i = 0; i < nq; ++i)
    for (int64_t k = 0; k < count; ++k) {
      const float* r = rows[k] + offset;
      double a = 0;
      for (int64_t j = 0; j < n; ++j) a += double(q[i * ldq + j]) * double(r[j]);
      out[i * ldo + k] = a;
    }
}

void axpy(double a, const float* x, int64_t n, double* y) {
  for (int64_t j = 0; j < n; ++j) y[j] += a * double(x[j]);
}

void axpy_bf16(double a, const void* x, int64_t n, double* y) {
  const auto* p = static_cast<const uint8_t*>(x);
  for (int64_t j = 0; j < n; ++j) y[j] += a * double(load_bf16(p + 2 * j));
}

void dot_rows64(const double* q, int64_t ldq, int nq, int64_t n, const double* const* rows, int64_t offset,
                int64_t count, double* out, int64_t ldo) {
  for (int i = 0; i < nq; ++i)
    for (int64_t k = 0; k < count; ++k) {
      const double* r = rows[k] + offset;
      double a = 0;
      for (int64_t j = 0; j < n; ++j) a += q[i * ldq + j] * r[j];
      out[i * ldo + k] = a;
    }
}

void axpy64(double a, const double* x, int64_t n, double* y) {
  for (int64_t j = 0; j < n; ++j) y[j] += a * x[j];
}

}  // namespace deltafin::kernels::scalar
