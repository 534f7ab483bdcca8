// KDA (Kimi Delta Attention): short convolution, gates, the recurrence and the gated output norm.
#include "cuda/k3/k3_common.cuh"

namespace deltafin::cuda::k3 {
namespace {

__global__ void kda_conv_kernel(const double* __restrict__ window, const double* __restrict__ raw, int T, int C, int K,
                                const float* tq, const float* tk, const float* tv, double* q, double* k, double* v) {
  pdl_enter();
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  const int which = blockIdx.y;
  if (ch >= C) return;
  const float* taps = (which == 0 ? tq : which == 1 ? tk : tv) + int64_t(ch) * K;
  double* out = which == 0 ? q : which == 1 ? k : v;
  const int K1 = K - 1;
  const double* win = window + int64_t(which) * K1 * C;
  for (int t = 0; t < T; ++t) {
    double acc = 0.0;
    for (int j = 0; j < K; ++j) {
      const int src = t + j;
      const double xv = src < K1 ? win[int64_t(src) * C + ch] : raw[(int64_t(src - K1) * 3 + which) * C + ch];
      acc = __fma_rn(taps[j], xv, acc);
    }
    out[int64_t(t) * C + ch] = acc * sigm(acc);
  }
}

__global__ void kda_window_kernel(const double* __restrict__ window, const double* __restrict__ raw, int n, int C,
                                  int K, double* __restrict__ nw) {
  pdl_enter();
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  const int which = blockIdx.y;
  if (ch >= C) return;
  const int K1 = K - 1;
  for (int r = 0; r < K1; ++r) {
    const int src = n + r;
    nw[(int64_t(which) * K1 + r) * C + ch] =
        src < K1 ? window[(int64_t(which) * K1 + src) * C + ch] : raw[(int64_t(src - K1) * 3 + which) * C + ch];
  }
}

__global__ void l2norm_heads_kernel(double* x, int d, double scale) {
  pdl_enter();
  double* v = x + int64_t(blockIdx.x) * d;  // one warp per (row, head)
  double ss = 0.0;
  for (int i = threadIdx.x; i < d; i += 32) ss = __fma_rn(v[i], v[i], ss);
  ss = warp_sum(ss);
  const double inv = 1.0 / sqrt(ss + 1e-6);
  for (int i = threadIdx.x; i < d; i += 32) v[i] = (v[i] * inv) * scale;
}

__global__ void kda_gates_kernel(const double* fb, const float* dt_bias, const float* a_log, const double* braw, int T,
                                 int heads, int d, double lower, double* la, double* beta) {
  pdl_enter();
  const int64_t C = int64_t(heads) * d;
  const int64_t n = int64_t(T) * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t idx = i % C;
    const int h = static_cast<int>(idx / d);
    const double ea = exp(static_cast<double>(a_log[h]));  // fp64 exp, not the float overload
    la[i] = lower * sigm(ea * (fb[i] + dt_bias[idx]));
    if (idx % d == 0) beta[(i / C) * heads + h] = sigm(braw[(i / C) * heads + h]);
  }
}

// One thread per value column j, in blocks of kStepCols columns of one head (every column's
// recurrence is its own: the state's column j, the head's keys, queries and decays); the block's
// columns of the state live in shared memory for all T steps. Per column the arithmetic is
// runtime/kda_core.cpp's step_head, summed in key order. Many small blocks rather than one per
// head: reading the state in and out is most of the work at small T, and this spreads it over
// every SM with all of a thread's loads in flight at once.
constexpr int kStepCols = 32;
__global__ void __launch_bounds__(kStepCols)
    kda_step_kernel(double* S, int heads, int dk, int dv, int T, const double* __restrict__ q,
                    const double* __restrict__ k, const double* __restrict__ v, const double* __restrict__ log_alpha,
                    const double* __restrict__ beta, double* o) {
  pdl_enter();
  extern __shared__ double smem[];
  double* Ss = smem;                          // [dk][kStepCols]
  double* ea = Ss + int64_t(dk) * kStepCols;  // [dk]
  double* ks = ea + dk;                       // [dk]
  double* qs = ks + dk;                       // [dk]
  const int h = blockIdx.x, c = threadIdx.x, j = blockIdx.y * kStepCols + c;
  const bool live = j < dv;
  double* Sg = S + int64_t(h) * dk * dv + j;  // column j, row stride dv
#pragma unroll 32
  for (int i = 0; i < dk; ++i) Ss[i * kStepCols + c] = live ? Sg[int64_t(i) * dv] : 0.0;
  const int64_t qk = int64_t(heads) * dk, vw = int64_t(heads) * dv;
  for (int t = 0; t < T; ++t) {
    __syncthreads();
    for (int i = c; i < dk; i += kStepCols) {
      ea[i] = exp(log_alpha[t * qk + int64_t(h) * dk + i]);
      ks[i] = k[t * qk + int64_t(h) * dk + i];
      qs[i] = q[t * qk + int64_t(h) * dk + i];
    }
    __syncthreads();
    if (live) {
      double kS = 0.0;
      for (int i = 0; i < dk; ++i) {
        const double sv = Ss[i * kStepCols + c] * ea[i];
        Ss[i * kStepCols + c] = sv;
        kS = __fma_rn(ks[i], sv, kS);
      }
      const double u = beta[t * heads + h] * (v[t * vw + int64_t(h) * dv + j] - kS);
      double acc = 0.0;
      for (int i = 0; i < dk; ++i) {
        const double sv = __fma_rn(ks[i], u, Ss[i * kStepCols + c]);
        Ss[i * kStepCols + c] = sv;
        acc = __fma_rn(qs[i], sv, acc);
      }
      o[t * vw + int64_t(h) * dv + j] = acc;
    }
  }
  if (live) {
#pragma unroll 16
    for (int i = 0; i < dk; ++i) Sg[int64_t(i) * dv] = Ss[i * kStepCols + c];
  }
}

constexpr int kHeadThreads = 128;
__global__ void __launch_bounds__(kHeadThreads)
    kda_out_kernel(double* o, const double* gate, const float* w, int d, double eps) {
  pdl_enter();
  __shared__ double sh[kHeadThreads / 32];
  double* v = o + int64_t(blockIdx.x) * d;
  const double* g = gate + int64_t(blockIdx.x) * d;
  double ss = 0.0;
  for (int i = threadIdx.x; i < d; i += kHeadThreads) ss = __fma_rn(v[i], v[i], ss);
  const double inv = 1.0 / sqrt(block_sum<kHeadThreads>(ss, sh) / static_cast<double>(d) + eps);
  for (int i = threadIdx.x; i < d; i += kHeadThreads) v[i] = ((v[i] * inv) * w[i]) * sigm(g[i]);
}

}  // namespace

void kda_conv(const double* window, const double* raw, int T, int C, int K, const float* tq, const float* tk,
              const float* tv, double* q, double* k, double* v, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(kda_conv_kernel, dim3(blocks_for(C, 128), 3), 128, 0, as_stream(s), window, raw, T, C, K,
                             tq, tk, tv, q, k, v));
}

void kda_window_after(const double* window, const double* raw, int n, int C, int K, double* nw, Stream s) {
  DELTAFIN_CUDA_CHECK(
      launch(kda_window_kernel, dim3(blocks_for(C, 128), 3), 128, 0, as_stream(s), window, raw, n, C, K, nw));
}

void l2norm_heads(double* x, int T, int heads, int d, double scale, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(l2norm_heads_kernel, T * heads, 32, 0, as_stream(s), x, d, scale));
}

void kda_gates(const double* fb, const float* dt_bias, const float* a_log, const double* braw, int T, int heads, int d,
               double lower, double* la, double* beta, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(kda_gates_kernel, grid_1d(int64_t(T) * heads * d), 256, 0, as_stream(s), fb, dt_bias,
                             a_log, braw, T, heads, d, lower, la, beta));
}

void kda_recurrent(double* S, int heads, int dk, int dv, int T, const double* q, const double* k, const double* v,
                   const double* log_alpha, const double* beta, double* o, Stream s) {
  if (T <= 0) return;
  const size_t smem = (size_t(dk) * kStepCols + 3 * size_t(dk)) * sizeof(double);
  static size_t opted = 48 * 1024;
  if (smem > opted) {
    DELTAFIN_CUDA_CHECK(cudaFuncSetAttribute(kda_step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    opted = smem;
  }
  const dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>((dv + kStepCols - 1) / kStepCols));
  DELTAFIN_CUDA_CHECK(
      launch(kda_step_kernel, grid, kStepCols, smem, as_stream(s), S, heads, dk, dv, T, q, k, v, log_alpha, beta, o));
}

void kda_out_norm_gate(double* o, const double* gate, const float* w, int T, int heads, int d, double eps, Stream s) {
  if (T <= 0) return;
  DELTAFIN_CUDA_CHECK(launch(kda_out_kernel, T * heads, kHeadThreads, 0, as_stream(s), o, gate, w, d, eps));
}

}  // namespace deltafin::cuda::k3
