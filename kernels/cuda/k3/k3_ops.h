#pragma once
// The K3 forward's own GPU ops (kernels/cuda/k3/, one file per area; engine/cuda runs them), over
// the shared kernel library (cuda/cuda_kernels.h: BF16 GEMM, RMSNorm, routed experts). The only
// router and the only SiTU GLU over rows on the GPU are here (the routed-expert kernels apply SiTU
// inline, cuda_common.cuh's situ_act). deltafin-cuda-check compares each op with a CPU reference.
// All fp64 arithmetic; every output row depends only on its own inputs and the state, with a
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
};

// Every activation is fp64 (the CPU forward's precision, docs/ENGINE.md "Exactness"): weights are
// read as stored (BF16 or fp32 spine matrices and norms, MXFP4 experts) and widened exactly, every
// product and sum is an fp64 operation, and only the logits are rounded (once, by narrow()).

// Y[t][o] = W[o] . X[t] in fp64: one fixed summation order per output that depends on the width only.
void gemm(const DevMat& w, const double* x, int64_t ldx, int T, double* y, int64_t ldy, Stream s);
// Rows `ids` of an embedding table, widened to fp64: y [T][cols].
void gather_rows(const DevMat& table, const int32_t* ids, int T, double* y, Stream s);
// y[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w per row of n (w fp32 on the device).
void rmsnorm(const double* x, int64_t ldx, const float* w, int64_t n, int T, double eps, double* y, int64_t ldy,
             Stream s);
// y[i] = x[i] rounded to fp32 (the logits, the forward's one rounding).
void narrow(const double* x, float* y, int64_t n, Stream s);

// AttnRes: per row, softmax over entries of dot(V_i / rms(V_i), w), then the weighted sum of the raw entries.
constexpr int kMaxResEntries = 32;
struct ResEntries {
  const double* p[kMaxResEntries];
  int n = 0;
};
// scratch: T x kMaxResEntries values (the entries' scores between the two launches).
void attn_res_mix(const ResEntries& e, const float* w, int T, int H, double eps, double* scratch, double* out,
                  Stream s);

// dst[i] = src[i], as a kernel: a copy node between two kernels would end their programmatic
// dependent launch chain (pdl.cuh).
void copy(const double* src, double* dst, int64_t n, Stream s);
void add(const double* a, const double* b, double* out, int64_t n, Stream s);
// out[i] = a[i] + (b[i] + c[i]) in one launch (c may be null: a + b)
void add_sum(const double* a, const double* b, const double* c, double* out, int64_t n, Stream s);
// out[i] = a[i] * sigmoid(g[i])
void mul_sigmoid(const double* a, const double* g, double* out, int64_t n, Stream s);
// SiTU GLU, beta*tanh(g/beta)*sigmoid(g) * lbeta*tanh(u/lbeta), over rows [T][gate (n) | up (n)]
// of a stacked gate/up GEMM: out [T][n]. The K3 forward passes situ.h's kSituBeta, kSituLinearBeta.
void situ_glu_rows(const double* gu, int T, int64_t n, double beta, double lbeta, double* out, Stream s);

// ---- KDA ----
// Causal depthwise conv (taps [C][K], oldest first) + SiLU over [K-1 window rows | T raw rows] for
// q, k and v at once. raw [T][3][C]; window [3][K-1][C]; taps q/k/v (fp32); out q, k, v [T][C].
void kda_conv(const double* window, const double* raw, int T, int C, int K, const float* tq, const float* tk,
              const float* tv, double* q, double* k, double* v, Stream s);
// new_window = the last K-1 rows of [window | first n raw rows], per q/k/v.
void kda_window_after(const double* window, const double* raw, int n, int C, int K, double* new_window, Stream s);
// x[t][h][:] = x / sqrt(sum x^2 + 1e-6) * scale per head of d.
void l2norm_heads(double* x, int T, int heads, int d, double scale, Stream s);
// log_alpha = lower * sigmoid(exp(a_log[h]) * (fb + dt_bias)); beta = sigmoid(braw).
void kda_gates(const double* fb, const float* dt_bias, const float* a_log, const double* braw, int T, int heads, int d,
               double lower, double* log_alpha, double* beta, Stream s);
// The KDA recurrence over T steps (runtime/kda_core.h layouts); S updated in place.
void kda_recurrent(double* S, int heads, int dk, int dv, int T, const double* q, const double* k, const double* v,
                   const double* log_alpha, const double* beta, double* o, Stream s);
// o[t][h] = rmsnorm(o[t][h], w, eps) * sigmoid(gate[t][h]) per head of d, in place.
void kda_out_norm_gate(double* o, const double* gate, const float* w, int T, int heads, int d, double eps, Stream s);

// ---- MLA (absorbed latent cache rows [R | P]) ----
// qabs[t][h][j] = sum_n q[t][h][n] * kv_b[h*(N+V)+n][j] for n < N (in n order); q rows [nh][N+P].
void mla_absorb_q(const double* q, const DevMat& kv_b, int T, int nh, int N, int P, int Vd, double* qabs, Stream s);
// olat[t][h] = softmax_s(scale * (qabs.lat_s + qrope.rope_s)) weighted sum of lat_s over s < base+t+1.
// scores: scratch [T][nh][max_ctx].
void mla_attend(const double* qabs, const double* q, const double* cache, int64_t base, int T, int nh, int N, int R,
                int P, double scale, double* scores, int64_t max_ctx, double* olat, Stream s);
// The same with base read from device memory when the kernel runs (a CUDA graph of a pass stays
// valid as the context grows); the caller checks *dev_base + T <= max_ctx.
void mla_attend_at(const double* qabs, const double* q, const double* cache, const int64_t* dev_base, int T, int nh,
                   int N, int R, int P, double scale, double* scores, int64_t max_ctx, double* olat, Stream s);
// dst rows *dev_row .. *dev_row + T - 1 = src rows 0 .. T - 1, rows of `width` values (row read on the device).
void rows_to_at(const double* src, int T, int64_t width, double* dst, const int64_t* dev_row, Stream s);
// attn[t][h][v] = kv_b[h*(N+V)+N+v] . olat[t][h]
void mla_value(const double* olat, const DevMat& kv_b, int T, int nh, int N, int R, int Vd, double* attn, Stream s);

// ---- MoE ----
// Router: s = sigmoid(logit); top_k by s + bias (ties: lower id); ids ascending; weight
// = s / (sum of chosen s in ascending id order + 1e-20) * scaling (or s * scaling without renormalisation).
void router_select(const double* logits, const float* bias, int T, int E, int k, bool renormalize, double scaling,
                   int32_t* ids, double* weights, Stream s);

// The routed experts of one MoE layer in fp64: for each row t and slot j < k,
//   y[t] = sum over j in slot order of w[t][j] * down_e(SiTU(gate_e z[t], up_e z[t])), e = table[slot[t][j]],
// every expert's MXFP4 rows (row layout: packed codes [rows][cols/2], E8M0 scales [rows][cols/32]) decoded
// exactly and multiplied by the fp64 activations. The (row, slot) pairs that choose one expert share its
// weight reads (grouped on the device), but each pair's sums run in an order fixed by the shapes: batch
// invariant. table and slot live in device memory (a graph-capturable pass passes the resident table and
// the router's ids). Workspace: routed_experts_scratch(T, k, latent, inter) doubles (staged activations,
// each (row, slot)'s SiTU output and down projection, for a pass of up to 256 pairs; larger T loops).
int64_t routed_experts_scratch(int T, int k, int latent, int inter);
void routed_experts(const MxExpert* table, const int32_t* slot, const double* w, int T, int k, int latent, int inter,
                    const double* z, double* scratch, double* y, Stream s);

}  // namespace deltafin::cuda::k3
