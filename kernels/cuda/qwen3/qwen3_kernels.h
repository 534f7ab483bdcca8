#pragma once
// Host API of the Qwen3 drafter's CUDA kernels (plain C++, no CUDA types). Same conventions as
// cuda/cuda_kernels.h: dev_* is device memory, calls are asynchronous on `stream`, errors throw
// deltafin::cuda::CudaError. All arithmetic is fp32 (RoPE angles in fp64, as on the CPU).
#include <cstddef>
#include <cstdint>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda::qwen3 {

// x[t][j] = widened BF16 embed[ids[t]][j] for j < hidden. ids must be inside the vocabulary.
void embed_rows(const void* dev_embed, int64_t hidden, const int32_t* dev_ids, int T, float* dev_x,
                Stream stream = nullptr);

// qkv rows [T][(heads + 2*kv_heads) * head_dim] (q heads, then k heads, then v heads) from one
// projection. Per head of q and k: RMSNorm over head_dim with the fp32 weight, then rotate-half RoPE
// at position pos0 + t (angle pos * theta^(-2i/head_dim) in fp64). q is rewritten in place; k and v
// rows are stored at position pos0 + t of the caches ([pos][kv_heads * head_dim]).
void qk_norm_rope_store(float* dev_qkv, int T, int heads, int kv_heads, int head_dim, const float* dev_q_norm,
                        const float* dev_k_norm, float eps, int64_t pos0, double theta, float* dev_k_cache,
                        float* dev_v_cache, Stream stream = nullptr);

// Causal GQA attention: row t, head h attends positions 0..pos0+t of the caches with kv head
// h / (heads / kv_heads); out [T][heads * head_dim]. dev_scores: scratch of T * heads * (pos0 + T)
// floats. The softmax weights are normalised before they scale v, summed in position order.
void gqa_attention(const float* dev_qkv, int T, int heads, int kv_heads, int head_dim, int64_t pos0,
                   const float* dev_k_cache, const float* dev_v_cache, float* dev_scores, float* dev_out,
                   Stream stream = nullptr);

// h[t][i] = silu(gu[t][i]) * gu[t][inter + i]: gate and up come from one [T][2*inter] projection.
void silu_gate(const float* dev_gu, int T, int64_t inter, float* dev_h, Stream stream = nullptr);

// x[i] += y[i].
void add_inplace(float* dev_x, const float* dev_y, int64_t n, Stream stream = nullptr);

// *dev_index = the first index of the largest of x[0..n) (NaNs never win).
void argmax(const float* dev_x, int64_t n, int32_t* dev_index, Stream stream = nullptr);

// Device-to-device copy of `bytes` (cache growth).
void copy_device(void* dev_dst, const void* dev_src, size_t bytes, Stream stream = nullptr);

// Benchmark weights: BF16 values uniform in [-scale, scale) from a counter-based hash of
// (seed, index), so no host copy is needed; or every element `value` (fp32).
void fill_random_bf16(void* dev_w, int64_t count, uint64_t seed, float scale, Stream stream = nullptr);
void fill_f32(float* dev_x, int64_t count, float value, Stream stream = nullptr);

}  // namespace deltafin::cuda::qwen3
