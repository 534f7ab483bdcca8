#pragma once
// The K3 forward's own GPU ops (kernels/cuda/k3/, one file per area; engine/cuda runs them), over
// the shared kernel library (cuda/cuda_kernels.h: BF16 GEMM, RMSNorm, routed experts). The only
// router and the only SiTU GLU over rows on the GPU are here (the routed-expert kernels apply SiTU
// inline, cuda_common.cuh's situ_act). deltafin-cuda-check compares each op with a CPU reference.
// All fp32 arithmetic; every output row depends only on its own inputs and the state, with a
// reduction order fixed by the shapes (never by T), so a row is bit-identical alone or in a pass.
// Plain C++ API (Stream = cudaStream_t kept opaque); pointers are device memory.
#include <cstdint>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda::k3 {

// A weight matrix in device memory: BF16 bits or fp32, row-major [rows][cols].
struct DevMat {
  const void* data = nullptr;
  bool bf16 = true;
  int64_t rows = 0, cols = 0;
  // BF16: the row count the GEMM version is chosen by (0: rows). Matrices stacked for one launch
  // set it to their parts' rows, so each output row keeps the version, and the bits, it had alone.
  int64_t version_rows = 0;
};

// Y[t][o] = W[o] . X[t]: BF16 through cuda::bf16_gemm, fp32 through a warp-per-row kernel.
void gemm(const DevMat& w, const float* x, int64_t ldx, int T, float* y, int64_t ldy, Stream s);
// Rows `ids` of an embedding table, widened to fp32: y [T][cols].
void gather_rows(const DevMat& table, const int32_t* ids, int T, float* y, Stream s);

// AttnRes: per row, softmax over entries of dot(V_i / rms(V_i), w), then the weighted sum of the raw entries.
constexpr int kMaxResEntries = 32;
struct ResEntries {
  const float* p[kMaxResEntries];
  int n = 0;
};
// scratch: T x kMaxResEntries floats (the entries' scores between the two launches).
void attn_res_mix(const ResEntries& e, const float* w, int T, int H, float eps, float* scratch, float* out, Stream s);

// dst[i] = src[i], as a kernel: a copy node between two kernels would end their programmatic
// dependent launch chain (pdl.cuh).
void copy(const float* src, float* dst, int64_t n, Stream s);
void add(const float* a, const float* b, float* out, int64_t n, Stream s);
// out[i] = a[i] + (b[i] + c[i]) in one launch (c may be null: a + b)
void add_sum(const float* a, const float* b, const float* c, float* out, int64_t n, Stream s);
// out[i] = a[i] * sigmoid(g[i])
void mul_sigmoid(const float* a, const float* g, float* out, int64_t n, Stream s);
// SiTU GLU, beta*tanh(g/beta)*sigmoid(g) * lbeta*tanh(u/lbeta), over rows [T][gate (n) | up (n)]
// of a stacked gate/up GEMM: out [T][n]. The K3 forward passes situ.h's kSituBeta, kSituLinearBeta.
void situ_glu_rows(const float* gu, int T, int64_t n, float beta, float lbeta, float* out, Stream s);

// ---- KDA ----
// Causal depthwise conv (taps [C][K], oldest first) + SiLU over [K-1 window rows | T raw rows] for
// q, k and v at once. raw [T][3][C]; window [3][K-1][C]; taps q/k/v; out q, k, v [T][C].
void kda_conv(const float* window, const float* raw, int T, int C, int K, const float* tq, const float* tk,
              const float* tv, float* q, float* k, float* v, Stream s);
// new_window = the last K-1 rows of [window | first n raw rows], per q/k/v.
void kda_window_after(const float* window, const float* raw, int n, int C, int K, float* new_window, Stream s);
// x[t][h][:] = x / sqrt(sum x^2 + 1e-6) * scale per head of d.
void l2norm_heads(float* x, int T, int heads, int d, float scale, Stream s);
// log_alpha = lower * sigmoid(exp(a_log[h]) * (fb + dt_bias)); beta = sigmoid(braw).
void kda_gates(const float* fb, const float* dt_bias, const float* a_log, const float* braw, int T, int heads, int d,
               float lower, float* log_alpha, float* beta, Stream s);
// The KDA recurrence over T steps (runtime/kda_core.h layouts); S updated in place.
void kda_recurrent(float* S, int heads, int dk, int dv, int T, const float* q, const float* k, const float* v,
                   const float* log_alpha, const float* beta, float* o, Stream s);
// o[t][h] = rmsnorm(o[t][h], w, eps) * sigmoid(gate[t][h]) per head of d, in place.
void kda_out_norm_gate(float* o, const float* gate, const float* w, int T, int heads, int d, float eps, Stream s);

// ---- MLA (absorbed latent cache rows [R | P]) ----
// qabs[t][h][j] = sum_n q[t][h][n] * kv_b[h*(N+V)+n][j] for n < N (in n order); q rows [nh][N+P].
void mla_absorb_q(const float* q, const DevMat& kv_b, int T, int nh, int N, int P, int Vd, float* qabs, Stream s);
// olat[t][h] = softmax_s(scale * (qabs.lat_s + qrope.rope_s)) weighted sum of lat_s over s < base+t+1.
// scores: scratch [T][nh][max_ctx].
void mla_attend(const float* qabs, const float* q, const float* cache, int64_t base, int T, int nh, int N, int R, int P,
                float scale, float* scores, int64_t max_ctx, float* olat, Stream s);
// The same with base read from device memory when the kernel runs (a CUDA graph of a pass stays
// valid as the context grows); the caller checks *dev_base + T <= max_ctx.
void mla_attend_at(const float* qabs, const float* q, const float* cache, const int64_t* dev_base, int T, int nh, int N,
                   int R, int P, float scale, float* scores, int64_t max_ctx, float* olat, Stream s);
// dst rows *dev_row .. *dev_row + T - 1 = src rows 0 .. T - 1, rows of `width` floats (row read on the device).
void rows_to_at(const float* src, int T, int64_t width, float* dst, const int64_t* dev_row, Stream s);
// attn[t][h][v] = kv_b[h*(N+V)+N+v] . olat[t][h]
void mla_value(const float* olat, const DevMat& kv_b, int T, int nh, int N, int R, int Vd, float* attn, Stream s);

// ---- MoE ----
// Router: s = sigmoid(logit); top_k by s + bias (ties: lower id); ids ascending; weight
// = s / (sum of chosen s in ascending id order + 1e-20) * scaling (or s * scaling without renormalisation).
void router_select(const float* logits, const float* bias, int T, int E, int k, bool renormalize, float scaling,
                   int32_t* ids, float* weights, Stream s);

}  // namespace deltafin::cuda::k3
