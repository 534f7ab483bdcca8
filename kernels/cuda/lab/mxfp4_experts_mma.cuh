// fp16 tensor-core arithmetic of the fragment-order expert kernels (mxfp4_experts_direct.cuh, included after
// expert_tasks.cuh in the same anonymous namespace): an E8M0 block against activation fragments (mma.sync.m16n8k16,
// fp32 accumulators), the fragments' staging, the pass's last sums. Weights decode exactly; activations split into
// three fp16 parts lose only bits below 2^-39 of the vector's largest element; so errors are fp32 summation's (proof,
// batch invariance: docs/CUDA.md "Tensor-core expert arithmetic"); bits differ from FFMA's (ExpertVariant::order).

namespace mma16 {

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// One 32-column block of a 16-row tile: its decoded codes (ra, rb: columns 0-15 and 16-31) times
// activation fragments f in two chained mma (the block sum, in fp32), scaled by the block's E8M0
// factors (s0 for row g, s1 for row g + 8) and added to acc. Every tensor-core version's block.
__device__ __forceinline__ void block_fma(const uint32_t (&ra)[4], const uint32_t (&rb)[4], uint4 f, float s0, float s1,
                                          float (&acc)[4]) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  mma16816(d, ra[0], rb[0], ra[1], rb[1], f.x, f.y);
  mma16816(d, ra[2], rb[2], ra[3], rb[3], f.z, f.w);
  acc[0] = __fmaf_rn(d[0], s0, acc[0]);
  acc[1] = __fmaf_rn(d[1], s0, acc[1]);
  acc[2] = __fmaf_rn(d[2], s1, acc[2]);
  acc[3] = __fmaf_rn(d[3], s1, acc[3]);
}

// e8m0 in two integer operations (shift, max) instead of a compare and a select: same bits.
__device__ __forceinline__ float e8m0_max(uint32_t s) { return __uint_as_float(max(s << 23, 0x00400000u)); }

// x * 2^k exactly for k in [-128, 160] (two steps so that each factor is a normal float).
__device__ __forceinline__ float scale_pow2(float x, int k) {
  const int k1 = k / 2, k2 = k - k1;
  return x * __uint_as_float(static_cast<uint32_t>(k1 + 127) << 23) *
         __uint_as_float(static_cast<uint32_t>(k2 + 127) << 23);
}

template <bool kCoherent>
__device__ __forceinline__ float4 ld4(const float* p) {
  if constexpr (kCoherent) return __ldcg(reinterpret_cast<const float4*>(p));
  else return __ldg(reinterpret_cast<const float4*>(p));
}

// stage_frags' second half: the three-part split of x0 and x1 given their largest magnitudes m0 and m1 (fmaxf of |x|
// over the vector, from 0; 0 for a missing x1). Called by the whole block (it synchronizes at the end).
// kMadOrder: the halves of columns 8q + {0,4,2,6,1,5,3,7}, the pairs e2m1_half2_mad decodes.
template <bool kCoherent, int kLanes, bool kMadOrder = false>
__device__ __forceinline__ void stage_split(char* frag, const float* x0, const float* x1, int K, float m0, float m1,
                                            float (&back)[2]) {
  // Biased exponent eb of the largest magnitude: |x| < 2^(eb - 126), so k = 141 - eb gives |x 2^k| < 2^15.
  const int eb0 = min(static_cast<int>(__float_as_uint(m0) >> 23), 254);
  const int eb1 = min(static_cast<int>(__float_as_uint(m1) >> 23), 254);
  back[0] = e8m0(static_cast<uint32_t>(eb0));  // 2^(eb - 127) = 2^(14 - k)
  back[1] = e8m0(static_cast<uint32_t>(eb1));
  const int nq = K / 8;  // (block, quad) pairs
  uint4* f = reinterpret_cast<uint4*>(frag);
  for (int i = threadIdx.x; i < nq; i += kThreads) {
    const int b = i >> 2, q = i & 3;
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const float* x = s ? x1 : x0;
      const int k = 141 - (s ? eb1 : eb0);
      uint32_t parts[3][4];
      if (x) {
        const float4 lo = ld4<kCoherent>(x + 8 * i), hi = ld4<kCoherent>(x + 8 * i + 4);
        const float v[8] = {lo.x,
                            kMadOrder ? hi.x : lo.z,
                            kMadOrder ? lo.z : hi.x,
                            hi.z,
                            lo.y,
                            kMadOrder ? hi.y : lo.w,
                            kMadOrder ? lo.w : hi.y,
                            hi.w};  // columns 0,2,4,6,1,3,5,7 (kMadOrder: 0,4,2,6,1,5,3,7)
        __half p[3][8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float xs = scale_pow2(v[j], k);
          p[0][j] = __float2half_rn(xs);
          const float r1 = xs - __half2float(p[0][j]);
          p[1][j] = __float2half_rn(r1);
          const float r2 = r1 - __half2float(p[1][j]);
          p[2][j] = __float2half_rn(r2);
        }
#pragma unroll
        for (int pp = 0; pp < 3; ++pp)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            parts[pp][j] = static_cast<uint32_t>(__half_as_ushort(p[pp][2 * j])) |
                           (static_cast<uint32_t>(__half_as_ushort(p[pp][2 * j + 1])) << 16);
      } else {
#pragma unroll
        for (int pp = 0; pp < 3; ++pp)
#pragma unroll
          for (int j = 0; j < 4; ++j) parts[pp][j] = 0u;
      }
#pragma unroll
      for (int pp = 0; pp < 3; ++pp)
        f[b * kLanes + (3 * s + pp) * 4 + q] = make_uint4(parts[pp][0], parts[pp][1], parts[pp][2], parts[pp][3]);
    }
    if constexpr (kLanes == 32) {
      f[b * 32 + 6 * 4 + q] = make_uint4(0u, 0u, 0u, 0u);
      f[b * 32 + 7 * 4 + q] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
  __syncthreads();
}

// B fragments for one or two activation vectors of width K (x1 may be null): slot s occupies columns 3s..3s+2 (parts
// 1..3); absent slots and columns 6, 7 are zero (the buffer's layout: docs/CUDA.md "Tensor-core expert arithmetic").
// back[s] receives 2^(14 - k_s), the factor that undoes the staging scale and the decode's 2^-14. kLanes = 24: only
// the lanes of columns 0-5 are stored; readers use zeros for 6 and 7. Called by the whole block (it synchronizes).
template <bool kCoherent, int kLanes = 32, bool kMadOrder = false>
__device__ void stage_frags(char* frag, float* red, const float* x0, const float* x1, int K, float (&back)[2]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m0 = 0.f, m1 = 0.f;
  for (int i = threadIdx.x; i < K / 4; i += kThreads) {
    const float4 v = ld4<kCoherent>(x0 + 4 * i);
    m0 = fmaxf(m0, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
    if (x1) {
      const float4 u = ld4<kCoherent>(x1 + 4 * i);
      m1 = fmaxf(m1, fmaxf(fmaxf(fabsf(u.x), fabsf(u.y)), fmaxf(fabsf(u.z), fabsf(u.w))));
    }
  }
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) {
    m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, m));
    m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, m));
  }
  if (lane == 0) {
    red[2 * warp] = m0;
    red[2 * warp + 1] = m1;
  }
  __syncthreads();
  m0 = m1 = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    m0 = fmaxf(m0, red[2 * w]);
    m1 = fmaxf(m1, red[2 * w + 1]);
  }
  stage_split<kCoherent, kLanes, kMadOrder>(frag, x0, x1, K, m0, m1, back);
}

// Pass pr over an expert's assignments a0..a1-1 takes two of them: their ids (aB = -1 past the end)
// and activation vectors (gate/up: the rows' z; down: the assignments' h).
struct PairVectors {
  int aA, aB;
  const float* xA;
  const float* xB;
};
template <bool kGateUp>
__device__ __forceinline__ PairVectors pair_vectors(const Params& P, int a0, int a1, int pr) {
  PairVectors v;
  v.aA = P.assign_list[a0 + 2 * pr];
  v.aB = a0 + 2 * pr + 1 < a1 ? P.assign_list[a0 + 2 * pr + 1] : -1;
  auto vec = [&](int a) {
    return kGateUp ? P.z + static_cast<int64_t>(a / P.K) * P.latent : P.h + static_cast<int64_t>(a) * P.inter;
  };
  v.xA = vec(v.aA);
  v.xB = v.aB < 0 ? nullptr : vec(v.aB);
  return v;
}

// One 16-row tile's accumulators (rows g and g + 8, columns 2q and 2q + 1): each row's three part
// sums of its lane's slot (quad 0: slot 0's columns 0-2; quad 1: slot 1's 3-5) added in one order.
__device__ __forceinline__ void slot_sums(const float (&acc)[4], int q, float (&v)[2]) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const float ev = acc[2 * hr], od = acc[2 * hr + 1];
    const float nev = __shfl_down_sync(0xffffffffu, ev, 1), nod = __shfl_down_sync(0xffffffffu, od, 1);
    v[hr] = q == 0 ? (ev + od) + nev : (od + nev) + nod;
  }
}

}  // namespace mma16
