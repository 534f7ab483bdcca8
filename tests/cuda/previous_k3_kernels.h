#pragma once
// The router and MLA kernels of kernels/cuda/k3 as they were before their latency
// rewrite, kept (for the checks only) to show that the rewrite changed no output bit.
#include <cstdint>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda::check::previous {

void router_select(const float* logits, const float* bias, int T, int E, int k, bool renormalize, float scaling,
                   int32_t* ids, float* weights, Stream s);
void mla_absorb_q(const float* q, const void* kv_b, bool bf16, int R, int T, int nh, int N, int P, int Vd, float* qabs,
                  Stream s);
void mla_value(const float* olat, const void* kv_b, bool bf16, int T, int nh, int N, int R, int Vd, float* attn,
               Stream s);
// The MLA attention over the latent cache rows 0 .. base + t of each row t (the first kernel).
void mla_attend(const float* qabs, const float* q, const float* cache, int64_t base, int T, int nh, int N, int R, int P,
                float scale, float* scores, int64_t max_ctx, float* olat, Stream s);
// s[i] = the router's sigmoid of x[i], computed on the device so that a CPU reference of the
// selection and the weights can start from the same bits.
void router_sigmoid(const float* x, float* s, int64_t n, Stream s_);

}  // namespace deltafin::cuda::check::previous
