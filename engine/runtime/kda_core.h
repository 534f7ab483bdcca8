#pragma once
#include <cstdint>

namespace deltafin {

// The KDA (Kimi delta attention) recurrence over T steps for all heads.
// Per head, state S is [dk][dv] (row = key channel):
//   S = diag(alpha) S;  S += k (beta * (v - k^T S))^T;  o = S^T q
// Layouts: q, k, log_alpha [T][heads*dk]; v, o [T][heads*dv]; beta [T][heads]; S [heads][dk][dv].
struct KdaShape {
  int heads = 0, dk = 0, dv = 0;
};

// Step by step: the reference, and the form every decode and verify pass uses
// (each row's arithmetic is the same whether it runs alone or inside a pass).
void kda_recurrent(const KdaShape& s, double* S, int T, const double* q, const double* k, const double* v,
                   const double* log_alpha, const double* beta, double* o);

// Chunkwise-parallel form for long prefills: the same function of the inputs,
// evaluated with per-chunk matrix products (equal to the recurrent form within rounding).
void kda_chunked(const KdaShape& s, double* S, int T, const double* q, const double* k, const double* v,
                 const double* log_alpha, const double* beta, double* o, int chunk = 64);

}  // namespace deltafin
