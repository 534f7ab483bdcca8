#include "runtime/kda_core.h"

#include <cmath>
#include <vector>

#include "base/thread_pool.h"

namespace deltafin {

namespace {

// One step of one head, in fp64: decay, k^T S, the delta update, q^T S.
void step_head(double* S, int dk, int dv, const double* q, const double* k, const double* v, const double* log_alpha,
               double beta, double* o, double* alpha, double* u, double* acc) {
  for (int i = 0; i < dk; ++i) alpha[i] = std::exp(log_alpha[i]);
  // ks = k^T (diag(alpha) S), summed over the key index in order.
  for (int j = 0; j < dv; ++j) acc[j] = 0;
  for (int i = 0; i < dk; ++i) {
    const double kai = k[i] * alpha[i];
    const double* row = S + int64_t(i) * dv;
    for (int j = 0; j < dv; ++j) acc[j] += kai * row[j];
  }
  for (int j = 0; j < dv; ++j) u[j] = beta * (v[j] - acc[j]);
  // S' = diag(alpha) S + k u^T; o = q^T S'.
  for (int j = 0; j < dv; ++j) acc[j] = 0;
  for (int i = 0; i < dk; ++i) {
    const double a = alpha[i], ki = k[i], qi = q[i];
    double* row = S + int64_t(i) * dv;
    for (int j = 0; j < dv; ++j) {
      const double s = a * row[j] + ki * u[j];
      row[j] = s;
      acc[j] += qi * s;
    }
  }
  for (int j = 0; j < dv; ++j) o[j] = acc[j];
}

}  // namespace

void kda_recurrent(const KdaShape& s, double* S, int T, const double* q, const double* k, const double* v,
                   const double* log_alpha, const double* beta, double* o) {
  const int64_t qk = int64_t(s.heads) * s.dk, vw = int64_t(s.heads) * s.dv;
  ThreadPool::global().parallel_for(static_cast<size_t>(s.heads), [&](size_t h0, size_t h1) {
    std::vector<double> alpha(s.dk), u(s.dv), acc(s.dv);
    for (size_t h = h0; h < h1; ++h)
      for (int t = 0; t < T; ++t)
        step_head(S + h * s.dk * s.dv, s.dk, s.dv, q + t * qk + h * s.dk, k + t * qk + h * s.dk, v + t * vw + h * s.dv,
                  log_alpha + t * qk + h * s.dk, beta[t * s.heads + h], o + t * vw + h * s.dv, alpha.data(), u.data(),
                  acc.data());
  });
}

void kda_chunked(const KdaShape& s, double* S, int T, const double* q, const double* k, const double* v,
                 const double* log_alpha, const double* beta, double* o, int chunk) {
  const int dk = s.dk, dv = s.dv;
  const int64_t qk = int64_t(s.heads) * dk, vw = int64_t(s.heads) * dv;
  ThreadPool::global().parallel_for(static_cast<size_t>(s.heads), [&](size_t h0, size_t h1) {
    std::vector<double> G, U, W, A;
    for (size_t h = h0; h < h1; ++h) {
      double* Sh = S + h * dk * dv;
      for (int c0 = 0; c0 < T; c0 += chunk) {
        const int C = std::min(chunk, T - c0);
        auto Q = [&](int t) { return q + (c0 + t) * qk + h * dk; };
        auto K = [&](int t) { return k + (c0 + t) * qk + h * dk; };
        auto V = [&](int t) { return v + (c0 + t) * vw + h * dv; };
        // G[t] = inclusive cumulative log decay inside the chunk.
        G.assign(size_t(C) * dk, 0.0);
        for (int t = 0; t < C; ++t)
          for (int d = 0; d < dk; ++d)
            G[t * dk + d] = (t ? G[(t - 1) * dk + d] : 0.0) + log_alpha[(c0 + t) * qk + h * dk + d];
        // W[t] = v_t - S0^T (Gamma_t k_t)
        W.assign(size_t(C) * dv, 0.0);
        for (int t = 0; t < C; ++t) {
          double* w = &W[t * dv];
          for (int j = 0; j < dv; ++j) w[j] = V(t)[j];
          for (int i = 0; i < dk; ++i) {
            const double bi = std::exp(G[t * dk + i]) * K(t)[i];
            const double* row = Sh + int64_t(i) * dv;
            for (int j = 0; j < dv; ++j) w[j] -= bi * row[j];
          }
        }
        // A[t][s] = sum_d k_t k_s exp(G_t - G_s) for s < t; solve the unit lower-triangular system for U.
        A.assign(size_t(C) * C, 0.0);
        for (int t = 0; t < C; ++t)
          for (int s2 = 0; s2 < t; ++s2) {
            double a = 0.0;
            for (int d = 0; d < dk; ++d) a += K(t)[d] * K(s2)[d] * std::exp(G[t * dk + d] - G[s2 * dk + d]);
            A[t * C + s2] = a;
          }
        U.assign(size_t(C) * dv, 0.0);
        for (int t = 0; t < C; ++t) {
          double* u = &U[t * dv];
          for (int j = 0; j < dv; ++j) u[j] = W[t * dv + j];
          for (int s2 = 0; s2 < t; ++s2) {
            const double a = A[t * C + s2];
            for (int j = 0; j < dv; ++j) u[j] -= a * U[s2 * dv + j];
          }
          const double b = beta[(c0 + t) * s.heads + h];
          for (int j = 0; j < dv; ++j) u[j] *= b;
        }
        // o_t = S0^T (Gamma_t q_t) + sum_{s<=t} (q_t . Gamma_t Gamma_s^-1 k_s) u_s
        for (int t = 0; t < C; ++t) {
          double* ot = o + (c0 + t) * vw + h * dv;
          for (int j = 0; j < dv; ++j) ot[j] = 0.0;
          for (int i = 0; i < dk; ++i) {
            const double gi = std::exp(G[t * dk + i]) * Q(t)[i];
            const double* row = Sh + int64_t(i) * dv;
            for (int j = 0; j < dv; ++j) ot[j] += gi * row[j];
          }
          for (int s2 = 0; s2 <= t; ++s2) {
            double a = 0.0;
            for (int d = 0; d < dk; ++d) a += Q(t)[d] * K(s2)[d] * std::exp(G[t * dk + d] - G[s2 * dk + d]);
            for (int j = 0; j < dv; ++j) ot[j] += a * U[s2 * dv + j];
          }
        }
        // S_end = Gamma_C S0 + sum_s (Gamma_C Gamma_s^-1 k_s) u_s^T
        const double* Gend = &G[(C - 1) * dk];
        for (int i = 0; i < dk; ++i) {
          double* row = Sh + int64_t(i) * dv;
          const double g = std::exp(Gend[i]);
          for (int j = 0; j < dv; ++j) row[j] *= g;
          for (int s2 = 0; s2 < C; ++s2) {
            const double ki = std::exp(Gend[i] - G[s2 * dk + i]) * K(s2)[i];
            for (int j = 0; j < dv; ++j) row[j] += ki * U[s2 * dv + j];
          }
        }
      }
    }
  });
}

}  // namespace deltafin
