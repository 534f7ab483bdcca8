#pragma once
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "model/dtype.h"

namespace deltafin {

// A weight matrix exactly as stored: [rows][cols] of BF16 or F32.
struct Mat {
  const void* data = nullptr;
  DType dtype = DType::BF16;
  int64_t rows = 0, cols = 0;
  uint64_t bytes() const { return static_cast<uint64_t>(rows) * cols * (dtype == DType::F32 ? 4 : 2); }
  float at(int64_t r, int64_t c) const;  // widened element (slow path)
};

// Y[t][o] = W[o] . X[t] for T rows, spread over the global pool by output row.
void matmul(const Mat& w, const float* x, int T, float* y);
// One output of a group of matrices that read the same input (all with x's column count).
struct MatOut {
  const Mat* w;
  float* y;
};
// Every W of the group times the same X, in one spread over the pool: one hand-over to the
// threads instead of one per matrix (the same rows, the same kernel, the same bits as matmul).
void matmul_group(std::initializer_list<MatOut> group, const float* x, int T);
// Output rows [o0, o1) only, written at y[t*ldy + o], on the calling thread.
void matmul_rows(const Mat& w, int64_t o0, int64_t o1, const float* x, int64_t ldx, int T, float* y, int64_t ldy);
// The same over fp64 activations (the K3 forward's): fp64 inputs, fp64 outputs, no fp32 rounding.
void matmul(const Mat& w, const double* x, int T, double* y);
struct MatOut64 {
  const Mat* w;
  double* y;
};
void matmul_group(std::initializer_list<MatOut64> group, const double* x, int T);
void matmul_rows(const Mat& w, int64_t o0, int64_t o1, const double* x, int64_t ldx, int T, double* y, int64_t ldy);
void matmul_mxfp4(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, const double* x, int T,
                  double* y);
// What the matrix ops above did since the process started, over every calling thread: weight bytes
// read and wall seconds inside the calls, BF16 / F32 matrices ("dense") and MXFP4 ones apart. The
// difference of two readings around a pass gives the rate its matrices ran at, to set beside the
// planner's probed rates (a pass's other work is the rest of its time).
struct OpTotals {
  uint64_t dense_bytes = 0, mxfp4_bytes = 0;
  double dense_seconds = 0, mxfp4_seconds = 0;
  OpTotals operator-(const OpTotals& o) const {
    return {dense_bytes - o.dense_bytes, mxfp4_bytes - o.mxfp4_bytes, dense_seconds - o.dense_seconds,
            mxfp4_seconds - o.mxfp4_seconds};
  }
};
OpTotals op_totals();
// One MXFP4 product of a group: y = W . x for T rows of x (cols wide), W [rows][cols].
struct Mxfp4Product {
  const uint8_t* packed;
  const uint8_t* scale;
  int64_t rows, cols;
  const double* x;
  int T;
  double* y;
};
// Every product of the group in one spread over the pool, their output rows end to end (several
// experts' gates and ups, then their downs): one hand-over to the threads instead of one per
// expert, each output row by the same kernel as matmul_mxfp4 (the same bits).
void matmul_mxfp4_many(const std::vector<Mxfp4Product>& group);
// MXFP4 matrix [rows][cols] from packed codes and E8M0 scales.
void matmul_mxfp4(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, const float* x, int T,
                  float* y);

// out = x * rsqrt(mean(x^2) + eps) * w: the squares summed in fp64 in index order, each output
// rounded once to fp32. out may be x.
void rmsnorm(const float* x, const float* w, int64_t n, double eps, float* out);
// The same from an fp64 input (a sum not yet rounded).
void rmsnorm(const double* x, const float* w, int64_t n, double eps, float* out);
// fp64 in and out.
void rmsnorm(const double* x, const float* w, int64_t n, double eps, double* out);
// 1 / sqrt(mean(x^2) + eps), in fp64 (rms_inv: rounded to fp32).
double rms_inv64(const float* x, int64_t n, double eps);
double rms_inv64(const double* x, int64_t n, double eps);
float rms_inv(const float* x, int64_t n, float eps);
inline float sigmoidf(float x);
// SiTU GLU activation: beta*tanh(g/beta)*sigmoid(g) * lbeta*tanh(u/lbeta).
void situ_glu(const float* g, const float* u, int64_t n, float beta, float lbeta, float* out);
void silu_inplace(float* x, int64_t n);
// The same in fp64.
void situ_glu(const double* g, const double* u, int64_t n, double beta, double lbeta, double* out);
int64_t argmax(const float* x, int64_t n);  // first maximum

inline float sigmoidf(float x) { return 1.f / (1.f + __builtin_expf(-x)); }

}  // namespace deltafin

namespace deltafin {
// acc[j] += s * W[r][j] for every column j (a widened row; each product rounded once in fp64, exact
// when s is an fp32 value).
void add_scaled_row(const Mat& w, int64_t r, double s, double* acc);
// 1 / (1 + exp(-x)) in fp64.
inline double sigmoid64(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// A view of rows [r0, r0 + n) of w.
Mat row_slice(const Mat& w, int64_t r0, int64_t n);
}  // namespace deltafin
