// The last experts' down tiles as one-tile parts of a second kernel (v169, v170).
// Included by mxfp4_experts.cu inside its anonymous namespace, after mxfp4_experts_direct.cuh.
//
// Why: at T = 1 the expert kernel's tasks run in waves (all blocks start together and tasks of one
// kind take about as long), and the last wave held only 28 down tasks: for ~13 us at the end of
// every call most SMs had nothing to do (v143 traces, docs/PERFORMANCE.md, sessions 17-19). A warp
// streaming a whole 16-row tile is bound by its own chain of loads, so the last wave cannot be
// shortened by bandwidth; only by more warps per tile. Here the expert kernel leaves the down tiles
// of the call's last `tail` experts out of its tickets, and expert_tail_kernel, launched right after
// it with PDL, runs each of those 16-row tiles as one block whose 8 warps each take an eighth of K.
// Its blocks become resident as the expert kernel's blocks run out of tickets, so the cut tiles fill
// the time the last wave left idle.
//
// Exactness: a tile's result is the chain acc = fma(d_b, s_b, acc) over its 32-column blocks b in
// order, where d_b (two mma into zero, block_fma) depends on block b alone. Each warp computes the
// d_b of its blocks exactly as the down task does (same decode, same staging, same mma) and leaves
// them in shared memory with their scales; warp 0 then runs the chain over all blocks in order and
// ends the tile with finish_tile. The same operations in the same order: the down task's bits
// (deltafin-cuda-check compares them with v20).
//
// Unlike session 18's split kernel (v159, ~9 us per part), a part issues every load it needs at
// once: its weights and scales before it waits for the expert's gate/up count, its h values and
// maxima right after, so a part is about three round trips and the chain.
namespace tail {

// 64-column chunks per warp, held in registers from the start: K3's inter = 3072 gives 6. The kernel
// is built for this count (registers), other shapes keep their down tiles in the expert kernel.
constexpr int kPer = 6;
static_assert(kPer % 2 == 0, "a warp's scale bytes are read as words");

inline bool fits(int latent, int inter, int tile_b) {
  return inter == 64 * kWarps * kPer && tile_b % 16 == 0 && latent % tile_b == 0;
}

// Shared memory: the fragments of the whole K (each warp its own blocks; overwritten by its d_b once
// read), each block's scales as float2 (row g, row g + 8) per g, then each warp's weight chunks
// (copied in with cp.async: in registers, six chunks held across the wait spilled).
inline size_t smem_bytes(int inter, int lanes) {
  return static_cast<size_t>(inter / 32) * (lanes * 16 + 8 * 8) + static_cast<size_t>(kWarps) * kPer * 512;
}

// Part p of the call's cut tiles: tile p / (tile_b / 16) of the last `tail` experts' down tiles
// (expert-major), rows 16 (p % (tile_b / 16)) of it. Called by the whole block.
template <int kL, bool kMad>
__device__ __forceinline__ void part(const Params& P, int tail, unsigned p, char* smem) {
  static_assert(kL >= 24, "a block's d_b take 24 lanes' words");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  const int parts = P.tile_b / 16;
  const int tt = static_cast<int>(p) / parts;  // cut tile index
  const int grp = P.nG - tail + tt / P.b_tiles, tile = tt % P.b_tiles;
  const int o0 = tile * P.tile_b + static_cast<int>(p) % parts * 16;
  const MxExpert e = P.experts[grp];
  const int a0 = P.grp_begin[grp], a1 = P.grp_begin[grp + 1];
  const int K = P.inter, nch = K / 64, nb = K / 32, srow = K / 32;
  constexpr int per = kPer;
  const int c0 = warp * per;  // this warp's chunks [c0, c0 + per)
  uint4* fw = reinterpret_cast<uint4*>(smem);
  float2* sc = reinterpret_cast<float2*>(smem + static_cast<size_t>(nb) * kL * 16);  // [block][g]
  const uint4* wbuf = reinterpret_cast<const uint4*>(smem + static_cast<size_t>(nb) * (kL * 16 + 64)) + warp * kPer * 32 + lane;

  // Weights and scale words first: they do not depend on the gate/up tasks.
  const uint4* wp = static_cast<const uint4*>(e.down_packed) + static_cast<int64_t>(o0 / 16) * nch * 32 + lane;
  {
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(wbuf));
#pragma unroll
    for (int j = 0; j < kPer; ++j) imma::cp_async16(dst + j * 512, wp + (c0 + j) * 32);
    imma::cp_async_commit();
  }
  // Rows g and g + 8, this warp's 2 * per scale bytes of each (words: 2 * c0 is a multiple of 4).
  const uint8_t* sb = static_cast<const uint8_t*>(e.down_scale) + static_cast<int64_t>(o0 + g) * srow + 2 * c0;
  uint32_t s0w[kPer / 2], s1w[kPer / 2];
#pragma unroll
  for (int i = 0; i < kPer / 2; ++i)
    if (4 * i < 2 * per) {
      s0w[i] = __ldg(reinterpret_cast<const uint32_t*>(sb) + i);
      s1w[i] = __ldg(reinterpret_cast<const uint32_t*>(sb + 8 * srow) + i);
    }

  // The first pass's assignments (routing tables: written before the launch).
  const mma16::PairVectors first = mma16::pair_vectors<false>(P, a0, a1, 0);
  const unsigned rec = P.nA + P.nB + p;  // diagnostics: this part's trace record (kind 2, its ticket)
  if (threadIdx.x == 0) {
    trace_at(rec, 1, 2u);
    wait_expert_a(P, grp);
    trace_at(rec, 2);
  }
  // This warp's blocks' scales, for warp 0's chain (byte k of the words: block 2 c0 + k).
  if (q == 0) {
#pragma unroll
    for (int k = 0; k < 2 * per; ++k) {
      const uint32_t b0 = (s0w[k / 4] >> (8 * (k % 4))) & 0xFFu, b1 = (s1w[k / 4] >> (8 * (k % 4))) & 0xFFu;
      sc[(2 * c0 + k) * 8 + g] = make_float2(mma16::e8m0_max(b0), mma16::e8m0_max(b1));
    }
  }
  __syncthreads();

  const int npairs = (a1 - a0 + 1) / 2;
  for (int pr = 0; pr < npairs; ++pr) {
    const mma16::PairVectors v = pr == 0 ? first : mma16::pair_vectors<false>(P, a0, a1, pr);
    // This warp's items (block, quad) [8 c0, 8 (c0 + per)): lane l takes items 8 c0 + l and 8 c0 + 32 + l.
    // h was written by this launch's gate/up tasks: L2 only.
    constexpr int kItems = (kPer * 8 + 31) / 32;
    const unsigned mAb = __ldcg(P.hmax + v.aA), mBb = v.aB >= 0 ? __ldcg(P.hmax + v.aB) : 0u;
    const int eb[2] = {min(static_cast<int>(mAb >> 23), 254), min(static_cast<int>(mBb >> 23), 254)};
    const float back[2] = {e8m0(static_cast<uint32_t>(eb[0])), e8m0(static_cast<uint32_t>(eb[1]))};
    // One vector at a time (a pass's second vector exists only where rows share the expert).
#pragma unroll 1
    for (int s = 0; s < 2; ++s) {
      const float* x = s ? v.xB : v.xA;
      float4 lo[kItems], hi[kItems];
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const int i = 8 * c0 + 32 * u + lane;
        if (x && 32 * u + lane < 8 * per) {
          lo[u] = __ldcg(reinterpret_cast<const float4*>(x + 8 * i));
          hi[u] = __ldcg(reinterpret_cast<const float4*>(x + 8 * i + 4));
        }
      }
      // stage_split's parts, for this warp's items only.
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const int i = 8 * c0 + 32 * u + lane;
        if (32 * u + lane < 8 * per) {
          const int b = i >> 2, qq = i & 3;
          uint32_t pt[3][4] = {};
          if (x) mma16::split_item<kMad>(lo[u], hi[u], 141 - eb[s], pt);
#pragma unroll
          for (int pp = 0; pp < 3; ++pp)
            fw[b * kL + (3 * s + pp) * 4 + qq] = make_uint4(pt[pp][0], pt[pp][1], pt[pp][2], pt[pp][3]);
          if (kL == 32 && s == 1) {
            fw[b * 32 + 6 * 4 + qq] = make_uint4(0u, 0u, 0u, 0u);
            fw[b * 32 + 7 * 4 + qq] = make_uint4(0u, 0u, 0u, 0u);
          }
        }
      }
    }
    __syncwarp();
    if (pr == 0) imma::cp_async_wait<0>();  // this lane's own weight words
    if (threadIdx.x == 0 && pr == 0) trace_at(rec, 3);
    // This warp's d_b, over its own fragments (every lane has read block b's before any writes its
    // d_b: the mma needs all of them), and its blocks' scales.
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const uint4 w = wbuf[j * 32];
      const int jc = c0 + j;
      uint4 f[2] = {make_uint4(0u, 0u, 0u, 0u), make_uint4(0u, 0u, 0u, 0u)};
      if (lane < kL) {
        f[0] = fw[(2 * jc) * kL + lane];
        f[1] = fw[(2 * jc + 1) * kL + lane];
      }
#pragma unroll
      for (int hb = 0; hb < 2; ++hb) {
        uint32_t ra[4], rb[4];
        const uint32_t wa = hb ? w.z : w.x, wb = hb ? w.w : w.y;
        if constexpr (kMad) {
          e2m1_half2_mad(wa, ra);
          e2m1_half2_mad(wb, rb);
        } else {
          e2m1_half2(wa, ra);
          e2m1_half2(wb, rb);
        }
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        mma16::mma16816(d, ra[0], rb[0], ra[1], rb[1], f[hb].x, f[hb].y);
        mma16::mma16816(d, ra[2], rb[2], ra[3], rb[3], f[hb].z, f[hb].w);
        const int b = 2 * jc + hb;
        __syncwarp();  // every lane has read block b's fragments
        if (q < 3) reinterpret_cast<float4*>(fw)[b * kL + g * 3 + q] = make_float4(d[0], d[1], d[2], d[3]);
      }
    }
    __syncthreads();  // every warp's d_b and scales are in shared memory
    if (warp == 0) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      const float4* terms = reinterpret_cast<const float4*>(fw);
#pragma unroll 8
      for (int b = 0; b < nb; ++b) {
        const float4 t = q < 3 ? terms[b * kL + g * 3 + q] : make_float4(0.f, 0.f, 0.f, 0.f);
        const float2 s = sc[b * 8 + g];
        acc[0] = __fmaf_rn(t.x, s.x, acc[0]);
        acc[1] = __fmaf_rn(t.y, s.x, acc[1]);
        acc[2] = __fmaf_rn(t.z, s.y, acc[2]);
        acc[3] = __fmaf_rn(t.w, s.y, acc[3]);
      }
      direct::finish_tile<false>(P, acc, back, v.aA, v.aB, o0, warp, lane, nullptr);
    }
    __syncthreads();  // warp 0 has read the terms before the next pass writes fragments
  }
}

}  // namespace tail

// The end of cut-tile part p, called by every thread after its d writes: the part that completes
// its down tile (the last of its tile_b / 16 parts) ends the tile as the tile's down task would.
template <bool kHmax>
__device__ __forceinline__ void finish_tail_part(const Params& P, int tail, unsigned p) {
  __shared__ bool s_completes;
  const int parts = P.tile_b / 16, tt = static_cast<int>(p) / parts;
  __threadfence();  // this part's d rows before its count
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* c = P.subdone + tt;
    s_completes = atomicAdd(c, 1u) == static_cast<unsigned>(parts) - 1u;
    if (s_completes) *c = 0u;  // every part of this call is in: the next call starts from 0
  }
  __syncthreads();
  if (s_completes) {
    __threadfence();  // the other parts' d rows, seen through their counts
    finish_down_fused<kHmax>(P, P.nG - tail + tt / P.b_tiles, tt % P.b_tiles);
  }
}

// Part p of the cut tiles and its end, run by the block that took its ticket. __noinline__: so that
// none of this code shares a function with the task loop (the loop slowed whenever another path was
// compiled into it, docs/PERFORMANCE.md, sessions 17-19). P is the kernel's __grid_constant__
// parameter (the tables in global memory).
template <int kL, bool kMad>
__device__ __noinline__ void tail_block(const Params& P, unsigned p) {
  extern __shared__ __align__(128) char smem[];
  __syncthreads();  // every warp is done with the last task's shared memory
  tail::part<kL, kMad>(P, P.tail, p, smem);
  finish_tail_part<true>(P, P.tail, p);
  if (threadIdx.x == 0) trace_at(P.nA + P.nB + p, 4);
}
