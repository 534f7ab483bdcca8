// KDA attention for a T-row pass (K3-SPEC.md section 3, "KDA").
#include <cmath>
#include <cstring>

#include "base/thread_pool.h"
#include "runtime/k3_model.h"
#include "runtime/kda_core.h"
#include "runtime/ops.h"

namespace deltafin {

namespace {

// Causal depthwise conv over [K-1 old rows | T new rows], then SiLU, for channels [c0, c1); in fp64.
void short_conv(const double* window, const double* raw, int T, int C, int c0, int c1, int K,
                const std::vector<float>& wt, int64_t raw_stride, double* out) {
  const int K1 = K - 1;
  for (int t = 0; t < T; ++t) {
    double* o = out + size_t(t) * C;
    for (int ch = c0; ch < c1; ++ch) {
      double acc = 0;
      for (int j = 0; j < K; ++j) {
        const int src = t + j;  // index into the virtual [window | raw] sequence
        const double xv = src < K1 ? window[size_t(src) * C + ch] : raw[size_t(src - K1) * raw_stride + ch];
        acc += double(wt[size_t(ch) * K + j]) * xv;
      }
      o[ch] = acc * sigmoid64(acc);
    }
  }
}

// x * rsqrt(sum x^2 + 1e-6) * scale per head, in fp64.
void l2norm_heads(double* x, int heads, int d, double scale) {
  for (int h = 0; h < heads; ++h) {
    double* v = x + size_t(h) * d;
    double ss = 0;
    for (int i = 0; i < d; ++i) ss += v[i] * v[i];
    const double inv = 1.0 / std::sqrt(ss + 1e-6) * scale;
    for (int i = 0; i < d; ++i) v[i] *= inv;
  }
}

}  // namespace

void K3Session::attention_kda(int layer, const double* x, int T, double* out, const PassOptions& opts) {
  const K3Config& c = m_.config();
  const KdaWeights& w = cur_->kda;
  KdaLayerState& st = st_.kda[layer];
  const int C = c.kda_dim(), K = c.conv_kernel, K1 = K - 1, nh = c.kda_heads, d = c.kda_head_dim;
  const int64_t rank = w.f_a.rows;

  // Projections: raw rows laid out as [T][q | k | v] so a row's conv inputs sit together.
  std::vector<double> rq(size_t(T) * C), rk(size_t(T) * C), rv(size_t(T) * C), gate(size_t(T) * C);
  std::vector<double> fa(size_t(T) * rank), fb(size_t(T) * C), braw(size_t(T) * nh);
  matmul_group({{&w.q_proj, rq.data()},
                {&w.k_proj, rk.data()},
                {&w.v_proj, rv.data()},
                {&w.g_proj, gate.data()},
                {&w.f_a, fa.data()},
                {&w.b_proj, braw.data()}},
               x, T);
  matmul(w.f_b, fa.data(), T, fb.data());

  KdaStagedRows& rows = staged_.kda[layer];
  rows.raw.resize(size_t(T) * 3 * C);
  for (int t = 0; t < T; ++t) {
    std::memcpy(&rows.raw[(size_t(t) * 3 + 0) * C], &rq[size_t(t) * C], size_t(C) * sizeof(double));
    std::memcpy(&rows.raw[(size_t(t) * 3 + 1) * C], &rk[size_t(t) * C], size_t(C) * sizeof(double));
    std::memcpy(&rows.raw[(size_t(t) * 3 + 2) * C], &rv[size_t(t) * C], size_t(C) * sizeof(double));
  }
  rows.q.resize(size_t(T) * C);
  rows.k.resize(size_t(T) * C);
  rows.v.resize(size_t(T) * C);
  const int64_t stride = 3 * int64_t(C);
  const double qscale = 1.0 / std::sqrt(double(d));
  rows.log_alpha.resize(size_t(T) * C);
  rows.beta.resize(size_t(T) * nh);
  // Per head: its channels' short convolutions, the L2 norms and the decay and beta gates. Heads are
  // independent and each value is computed whole by one thread, so the bits do not depend on how
  // the pool splits them (tens of thousands of exp() a layer: on one thread, milliseconds of a
  // decode step on a 16-thread host).
  ThreadPool::global().parallel_for(size_t(nh), [&](size_t h0, size_t h1) {
    const int c0 = int(h0) * d, c1 = int(h1) * d;
    short_conv(st.conv.data() + size_t(0) * K1 * C, rows.raw.data() + 0 * C, T, C, c0, c1, K, w.q_conv, stride,
               rows.q.data());
    short_conv(st.conv.data() + size_t(1) * K1 * C, rows.raw.data() + 1 * C, T, C, c0, c1, K, w.k_conv, stride,
               rows.k.data());
    short_conv(st.conv.data() + size_t(2) * K1 * C, rows.raw.data() + 2 * C, T, C, c0, c1, K, w.v_conv, stride,
               rows.v.data());
    for (int t = 0; t < T; ++t) {
      l2norm_heads(&rows.q[size_t(t) * C + size_t(c0)], int(h1 - h0), d, qscale);
      l2norm_heads(&rows.k[size_t(t) * C + size_t(c0)], int(h1 - h0), d, 1.0);
    }
    for (int t = 0; t < T; ++t) {
      for (int h = int(h0); h < int(h1); ++h) {
        const double ea = std::exp(double(w.a_log[h]));
        for (int i = 0; i < d; ++i) {
          const size_t idx = size_t(h) * d + i;
          const double z = fb[size_t(t) * C + idx] + double(w.dt_bias[idx]);
          rows.log_alpha[size_t(t) * C + idx] = double(c.gate_lower_bound) * sigmoid64(ea * z);
        }
        rows.beta[size_t(t) * nh + h] = sigmoid64(braw[size_t(t) * nh + h]);
      }
    }
  });

  if (opts.partial_commit) {
    rows.S0 = st.S;
    rows.conv0 = st.conv;
  }
  // New conv window: the last K-1 rows of [old window | raw rows], in place. Row r comes from row
  // T + r of that sequence, always a later row, so going up no source is overwritten before it is read.
  for (int which = 0; which < 3; ++which) {
    double* win = st.conv.data() + size_t(which) * K1 * C;
    for (int r = 0; r < K1; ++r) {
      const int src = T + r;
      const double* from = src < K1 ? win + size_t(src) * C : &rows.raw[(size_t(src - K1) * 3 + which) * C];
      std::memcpy(win + size_t(r) * C, from, size_t(C) * sizeof(double));
    }
  }

  std::vector<double> o(size_t(T) * C);
  const KdaShape shape{nh, d, d};
  if (opts.chunked_kda)
    kda_chunked(shape, st.S.data(), T, rows.q.data(), rows.k.data(), rows.v.data(), rows.log_alpha.data(),
                rows.beta.data(), o.data());
  else
    kda_recurrent(shape, st.S.data(), T, rows.q.data(), rows.k.data(), rows.v.data(), rows.log_alpha.data(),
                  rows.beta.data(), o.data());

  // Per-head RMSNorm and output gate (heads spread over the pool as above), then the projection.
  ThreadPool::global().parallel_for(size_t(nh), [&](size_t h0, size_t h1) {
    for (int t = 0; t < T; ++t)
      for (int h = int(h0); h < int(h1); ++h) {
        double* oh = &o[size_t(t) * C + size_t(h) * d];
        rmsnorm(oh, w.o_norm.data(), d, c.rms_eps, oh);
        for (int i = 0; i < d; ++i) oh[i] *= sigmoid64(gate[size_t(t) * C + size_t(h) * d + i]);
      }
  });
  matmul(w.o_proj, o.data(), T, out);
}

}  // namespace deltafin
