#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/gemm.h"
#include "runtime/ops.h"

namespace deltafin {

// Query heads over absorbed MLA rows [R latent | P shared key part]: scores
// (q_abs . latent + q_rope . rope) * scale, softmax in row order, then the
// probability-weighted sum of the latents into olat[R]. row_at(s) gives row s.
// Shared by the K3 target and DSpark so both reduce in exactly this order.
// Scores, softmax and the weighted sum are fp64 (fp32 products are exact there), each sum a
// plain loop in index order; olat is rounded once to F. F is float (DSpark) or double (the K3
// forward, whose queries and cached rows are fp64). The kernels (kernels/cpu: dot_rows, axpy and
// their fp64 twins) keep exactly the plain loops' bits while running many positions at once.
//
// nq queries of one head at once (the rows of one pass): query i uses qabs + i * ld_abs,
// qrope + i * ld_rope, sees the first counts[i] rows (nondecreasing) and writes olat + i * R.
// Each query's result is the one it gets alone; sharing only saves loading the rows again.
template <class F, class RowAt>
void latent_attention(const F* qabs, int64_t ld_abs, const F* qrope, int64_t ld_rope, int nq, int R, int P,
                      double scale, const size_t* counts, RowAt row_at, std::vector<double>& scratch, F* olat) {
  const kernels::KernelTable& kt = kernels::active();
  auto dot = [&](auto... args) {
    if constexpr (std::is_same_v<F, double>) kt.dot_rows64(args...);
    else kt.dot_rows(args...);
  };
  const size_t total = counts[nq - 1], common = counts[0];
  thread_local std::vector<const F*> rows;
  rows.resize(total);
  for (size_t s = 0; s < total; ++s) rows[s] = row_at(s);
  scratch.resize(2 * size_t(nq) * total + R);
  double* score = scratch.data();  // [nq][total]
  double* rope = scratch.data() + size_t(nq) * total;
  double* acc = rope + size_t(nq) * total;  // [R]
  const int64_t ld = int64_t(total);
  dot(qabs, ld_abs, nq, int64_t(R), rows.data(), int64_t(0), int64_t(common), score, ld);
  dot(qrope, ld_rope, nq, int64_t(P), rows.data(), int64_t(R), int64_t(common), rope, ld);
  for (int i = 1; i < nq; ++i) {
    const int64_t extra = int64_t(counts[i] - common);
    dot(qabs + i * ld_abs, ld_abs, 1, int64_t(R), rows.data() + common, int64_t(0), extra, score + i * ld + common, ld);
    dot(qrope + i * ld_rope, ld_rope, 1, int64_t(P), rows.data() + common, int64_t(R), extra, rope + i * ld + common,
        ld);
  }
  for (int i = 0; i < nq; ++i) {
    double* probs = score + i * ld;
    const double* r = rope + i * ld;
    const size_t count = counts[i];
    double mx = -INFINITY;
    for (size_t s = 0; s < count; ++s) {
      probs[s] = (probs[s] + r[s]) * scale;
      mx = std::max(mx, probs[s]);
    }
    double sum = 0;
    for (size_t s = 0; s < count; ++s) {
      probs[s] = std::exp(probs[s] - mx);
      sum += probs[s];
    }
    std::fill(acc, acc + R, 0.0);
    for (size_t s = 0; s < count; ++s) {
      if constexpr (std::is_same_v<F, double>) kt.axpy64(probs[s] / sum, rows[s], R, acc);
      else kt.axpy(probs[s] / sum, rows[s], R, acc);
    }
    F* o = olat + size_t(i) * R;
    for (int j = 0; j < R; ++j) o[j] = F(acc[j]);
  }
}

// Absorbed MLA for every head and row of a pass: row t's query q + (t * heads + h) * (N + P) is
// folded through kv_b's N key rows of head h, attends over the first visible(t) rows (row_at), and
// kv_b's Vd value rows are applied to the result, into out[t][h][Vd]. A job is one head for up to
// four consecutive rows, which read the cached rows once for all of them; every (row, head)
// computes what it would alone. Shared by the K3 target and DSpark.
template <class F, class RowAt, class Visible>
void absorbed_mla_heads(const Mat& kv_b, const F* q, int T, int heads, int N, int P, int R, int Vd, double scale,
                        RowAt row_at, Visible visible, F* out) {
  constexpr int kRows = 4;
  const int qh = N + P, kvh = N + Vd, blocks = (T + kRows - 1) / kRows;
  ThreadPool::global().parallel_for(size_t(blocks) * heads, [&](size_t b, size_t e) {
    std::vector<F> qabs(size_t(kRows) * R), olat(size_t(kRows) * R);
    std::vector<double> scratch, qsum(R);
    for (size_t job = b; job < e; ++job) {
      const int t0 = static_cast<int>(job / heads) * kRows, h = static_cast<int>(job % heads);
      const int nq = std::min(kRows, T - t0);
      size_t counts[kRows];
      for (int i = 0; i < nq; ++i) {
        const F* qn = &q[(size_t(t0 + i) * heads + h) * qh];
        // The query folded through the head's key rows: products summed in fp64, one rounding to F.
        std::fill(qsum.begin(), qsum.end(), 0.0);
        for (int n = 0; n < N; ++n) add_scaled_row(kv_b, int64_t(h) * kvh + n, qn[n], qsum.data());
        F* qa = &qabs[size_t(i) * R];
        for (int j = 0; j < R; ++j) qa[j] = F(qsum[j]);
        counts[i] = visible(t0 + i);
      }
      latent_attention(qabs.data(), R, &q[(size_t(t0) * heads + h) * qh + N], int64_t(heads) * qh, nq, R, P, scale,
                       counts, row_at, scratch, olat.data());
      const Mat wv = row_slice(kv_b, int64_t(h) * kvh + N, Vd);
      for (int i = 0; i < nq; ++i)
        matmul_rows(wv, 0, Vd, &olat[size_t(i) * R], R, 1, &out[(size_t(t0 + i) * heads + h) * Vd], Vd);
    }
  });
}

}  // namespace deltafin
