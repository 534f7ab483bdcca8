#include "runtime/ops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/error.h"
#include "base/thread_pool.h"
#include "cpu/gemm.h"

namespace deltafin {

float Mat::at(int64_t r, int64_t c) const {
  const auto* p = static_cast<const uint8_t*>(data);
  if (dtype == DType::F32) {
    float f;
    std::memcpy(&f, p + 4 * (r * cols + c), 4);
    return f;
  }
  uint16_t v;
  std::memcpy(&v, p + 2 * (r * cols + c), 2);
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {

// Running totals of the matrix ops (op_totals()): weight bytes read and nanoseconds inside the calls.
std::atomic<uint64_t> g_dense_bytes{0}, g_dense_ns{0}, g_mxfp4_bytes{0}, g_mxfp4_ns{0};

// Adds one call's bytes and wall time to a pair of totals when it goes out of scope.
class OpTimer {
 public:
  OpTimer(std::atomic<uint64_t>& bytes, std::atomic<uint64_t>& ns, uint64_t n)
      : ns_(ns), t0_(std::chrono::steady_clock::now()) {
    bytes.fetch_add(n, std::memory_order_relaxed);
  }
  ~OpTimer() {
    const auto d = std::chrono::steady_clock::now() - t0_;
    ns_.fetch_add(uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()), std::memory_order_relaxed);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  std::atomic<uint64_t>& ns_;
  std::chrono::steady_clock::time_point t0_;
};

// An MXFP4 matrix's bytes: 4-bit codes and one E8M0 scale per 32 values.
uint64_t mxfp4_bytes(int64_t rows, int64_t cols) {
  return uint64_t(rows) * uint64_t(cols) / 2 + uint64_t(rows) * uint64_t(cols) / 32;
}

// One call's arguments for x and y of either width (fp64 ones go to the kernels' xd / yd).
kernels::RowsArgs rows_args(const void* w, const uint8_t* scale, int64_t in, int64_t o0, int64_t o1, const float* x,
                            int64_t ldx, int T, float* y, int64_t ldy) {
  return kernels::RowsArgs{w, scale, in, o0, o1, x, ldx, T, y, ldy};
}
kernels::RowsArgs rows_args(const void* w, const uint8_t* scale, int64_t in, int64_t o0, int64_t o1, const double* x,
                            int64_t ldx, int T, double* y, int64_t ldy) {
  kernels::RowsArgs a{w, scale, in, o0, o1, nullptr, ldx, T, nullptr, ldy};
  a.xd = x;
  a.yd = y;
  return a;
}

template <class X>
void matmul_rows_t(const Mat& w, int64_t o0, int64_t o1, const X* x, int64_t ldx, int T, X* y, int64_t ldy) {
  const auto& k = kernels::active();
  const kernels::RowsArgs a = rows_args(w.data, nullptr, w.cols, o0, o1, x, ldx, T, y, ldy);
  if (w.dtype == DType::BF16) k.bf16_rows(a);
  else if (w.dtype == DType::F32) k.f32_rows(a);
  else throw Error(std::string("matmul on unsupported dtype ") + dtype_name(w.dtype));
}

// Output rows per task of a matrix of `rows` rows: enough that threads do not share cache lines of y.
size_t row_grain(int64_t rows) { return rows >= 1024 ? 64 : 16; }

template <class X>
void matmul_t(const Mat& w, const X* x, int T, X* y) {
  const OpTimer timer(g_dense_bytes, g_dense_ns, w.bytes());
  ThreadPool::global().parallel_for(
      static_cast<size_t>(w.rows),
      [&](size_t b, size_t e) { matmul_rows_t(w, int64_t(b), int64_t(e), x, w.cols, T, y, w.rows); },
      row_grain(w.rows));
}

template <class Out, class X>
void matmul_group_t(std::initializer_list<Out> group, const X* x, int T) {
  // The group's output rows end to end; a thread's range may cover parts of several matrices.
  int64_t total = 0, smallest = INT64_MAX;
  uint64_t bytes = 0;
  for (const Out& m : group) total += m.w->rows, smallest = std::min(smallest, m.w->rows), bytes += m.w->bytes();
  const OpTimer timer(g_dense_bytes, g_dense_ns, bytes);
  ThreadPool::global().parallel_for(
      static_cast<size_t>(total),
      [&](size_t b, size_t e) {
        int64_t base = 0;
        for (const Out& m : group) {
          const int64_t lo = std::max<int64_t>(int64_t(b), base), hi = std::min<int64_t>(int64_t(e), base + m.w->rows);
          if (lo < hi) matmul_rows_t(*m.w, lo - base, hi - base, x, m.w->cols, T, m.y, m.w->rows);
          base += m.w->rows;
        }
      },
      row_grain(smallest));
}

template <class X>
void matmul_mxfp4_t(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, const X* x, int T, X* y) {
  const auto& k = kernels::active();
  const OpTimer timer(g_mxfp4_bytes, g_mxfp4_ns, mxfp4_bytes(rows, cols));
  ThreadPool::global().parallel_for(
      static_cast<size_t>(rows),
      [&](size_t b, size_t e) {
        k.mxfp4_rows(rows_args(packed, scale, cols, int64_t(b), int64_t(e), x, cols, T, y, rows));
      },
      64);
}

}  // namespace

void matmul_rows(const Mat& w, int64_t o0, int64_t o1, const float* x, int64_t ldx, int T, float* y, int64_t ldy) {
  matmul_rows_t(w, o0, o1, x, ldx, T, y, ldy);
}
void matmul_rows(const Mat& w, int64_t o0, int64_t o1, const double* x, int64_t ldx, int T, double* y, int64_t ldy) {
  matmul_rows_t(w, o0, o1, x, ldx, T, y, ldy);
}
void matmul(const Mat& w, const float* x, int T, float* y) { matmul_t(w, x, T, y); }
void matmul(const Mat& w, const double* x, int T, double* y) { matmul_t(w, x, T, y); }
void matmul_group(std::initializer_list<MatOut> group, const float* x, int T) { matmul_group_t(group, x, T); }
void matmul_group(std::initializer_list<MatOut64> group, const double* x, int T) { matmul_group_t(group, x, T); }

OpTotals op_totals() {
  OpTotals t;
  t.dense_bytes = g_dense_bytes.load(std::memory_order_relaxed);
  t.mxfp4_bytes = g_mxfp4_bytes.load(std::memory_order_relaxed);
  t.dense_seconds = double(g_dense_ns.load(std::memory_order_relaxed)) * 1e-9;
  t.mxfp4_seconds = double(g_mxfp4_ns.load(std::memory_order_relaxed)) * 1e-9;
  return t;
}

void matmul_mxfp4_many(const std::vector<Mxfp4Product>& group) {
  const auto& k = kernels::active();
  int64_t total = 0;
  uint64_t bytes = 0;
  for (const Mxfp4Product& p : group) total += p.rows, bytes += mxfp4_bytes(p.rows, p.cols);
  const OpTimer timer(g_mxfp4_bytes, g_mxfp4_ns, bytes);
  ThreadPool::global().parallel_for(
      static_cast<size_t>(total),
      [&](size_t b, size_t e) {
        int64_t base = 0;
        for (const Mxfp4Product& p : group) {
          const int64_t lo = std::max<int64_t>(int64_t(b), base), hi = std::min<int64_t>(int64_t(e), base + p.rows);
          if (lo < hi)
            k.mxfp4_rows(rows_args(p.packed, p.scale, p.cols, lo - base, hi - base, p.x, p.cols, p.T, p.y, p.rows));
          base += p.rows;
          if (base >= int64_t(e)) break;
        }
      },
      64);
}
void matmul_mxfp4(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, const float* x, int T,
                  float* y) {
  matmul_mxfp4_t(packed, scale, rows, cols, x, T, y);
}
void matmul_mxfp4(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, const double* x, int T,
                  double* y) {
  matmul_mxfp4_t(packed, scale, rows, cols, x, T, y);
}

double rms_inv64(const float* x, int64_t n, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
  return 1.0 / std::sqrt(ss / double(n) + eps);
}

double rms_inv64(const double* x, int64_t n, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  return 1.0 / std::sqrt(ss / double(n) + eps);
}

float rms_inv(const float* x, int64_t n, float eps) { return float(rms_inv64(x, n, eps)); }

void rmsnorm(const float* x, const float* w, int64_t n, double eps, float* out) {
  const double inv = rms_inv64(x, n, eps);
  for (int64_t i = 0; i < n; ++i) out[i] = float(double(x[i]) * inv * double(w[i]));
}

void rmsnorm(const double* x, const float* w, int64_t n, double eps, float* out) {
  const double inv = rms_inv64(x, n, eps);
  for (int64_t i = 0; i < n; ++i) out[i] = float(x[i] * inv * double(w[i]));
}

void rmsnorm(const double* x, const float* w, int64_t n, double eps, double* out) {
  const double inv = rms_inv64(x, n, eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * double(w[i]);
}

void situ_glu(const double* g, const double* u, int64_t n, double beta, double lbeta, double* out) {
  auto range = [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const double a = beta * std::tanh(g[i] / beta) * sigmoid64(g[i]);
      const double c = lbeta * std::tanh(u[i] / lbeta);
      out[i] = a * c;
    }
  };
  // Two tanh and an exp per element: a layer's 16 experts' activations (16 x 3072) take
  // milliseconds on one thread, as long as their matrices take over 16 threads, so large calls
  // spread over the pool (each element by the same code: the same bits).
  if (n >= 4096) ThreadPool::global().parallel_for(size_t(n), range, 512);
  else range(0, size_t(n));
}

void situ_glu(const float* g, const float* u, int64_t n, float beta, float lbeta, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = beta * std::tanh(g[i] / beta) * sigmoidf(g[i]);
    const float b = lbeta * std::tanh(u[i] / lbeta);
    out[i] = a * b;
  }
}

void silu_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * sigmoidf(x[i]);
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace deltafin

namespace deltafin {

void add_scaled_row(const Mat& w, int64_t r, double s, double* acc) {
  const auto* p = static_cast<const uint8_t*>(w.data);
  if (w.dtype == DType::F32) {
    const uint8_t* row = p + 4 * r * w.cols;
    for (int64_t j = 0; j < w.cols; ++j) {
      float f;
      std::memcpy(&f, row + 4 * j, 4);
      acc[j] += s * double(f);
    }
    return;
  }
  kernels::active().axpy_bf16(s, p + 2 * r * w.cols, w.cols, acc);  // each product rounded once, added in fp64
}

Mat row_slice(const Mat& w, int64_t r0, int64_t n) {
  const int64_t esize = w.dtype == DType::F32 ? 4 : 2;
  return Mat{static_cast<const uint8_t*>(w.data) + r0 * w.cols * esize, w.dtype, n, w.cols};
}

}  // namespace deltafin
