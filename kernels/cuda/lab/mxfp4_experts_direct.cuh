// Tensor-core tasks that read the weights in fragment order straight into registers: the product's v134, v212, v183,
// v138 and v194 (the lab's others: lab/mxfp4_experts_direct_lab.cuh). Included in an anonymous namespace after
// mxfp4_experts_mma.cuh: tickets, tasks and counters are expert_tasks.cuh's, the arithmetic mma16's. Why this form,
// the fragment order and why the bits are the staged versions': docs/CUDA.md "Fragment-order expert versions".
namespace direct {

// Tiles, fragment buffers, shared memory and the widths handled: expert_geometry.h (the host needs them too).
using namespace ::deltafin::cuda::geometry::direct;

constexpr int NT = 1;  // 16-row tiles per warp (geometry's NT = 1)

__device__ __forceinline__ uint4 ld_weights(const uint4* p) { return ld_stream16(p); }

// Byte i (0..7, known at compile time after unrolling) of a row's eight scales, as a float.
__device__ __forceinline__ float scale_at(uint2 s, int i) {
  return mma16::e8m0_max(((i < 4 ? s.x : s.y) >> (8 * (i & 3))) & 0xFFu);
}

// scale_at without the integer pipe, for scales that are not 0: byte i moved to bits 23-30 by
// multiplies alone (E8M0 0 would come out as 0.f instead of 2^-127: groups holding one take scale_at).
__device__ __forceinline__ float scale_at_fma(uint2 s, int i) {
  const uint32_t v = i < 4 ? s.x : s.y;
  const int k = i & 3;
  if (k == 0) return __uint_as_float(__umulhi(v << 24, 1u << 31));
  if (k == 3) return __uint_as_float(__umulhi(v, 1u << 8) << 23);
  return __uint_as_float(__umulhi(v << (24 - 8 * k), 1u << 8) << 23);
}

// Whether any lane's scales of this group hold an E8M0 0 (2^-127): then the group runs scale_at.
__device__ __forceinline__ bool any_zero_scale(const uint2 (&s)[NT][2]) {
  uint32_t z = 0;
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      z |= (s[t][r].x - 0x01010101u) & ~s[t][r].x;
      z |= (s[t][r].y - 0x01010101u) & ~s[t][r].y;
    }
  return __any_sync(0xffffffffu, (z & 0x80808080u) != 0);
}

// One 64-column chunk (blocks 2j, 2j + 1) of the warp's tile against activation fragments f0, f1,
// decoded through e2m1_half2_mad (its column pairs are the staging's). kFma: the scales through
// scale_at_fma, for groups without an E8M0 0 (the same values).
template <bool kFma>
__device__ __forceinline__ void chunk(const uint4 (&w)[NT], uint4 f0, uint4 f1, const uint2 (&s)[NT][2], int jj,
                                      float (&acc)[NT][4]) {
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int hb = 0; hb < 2; ++hb) {
      uint32_t ra[4], rb[4];
      const uint32_t wa = hb ? w[t].z : w[t].x, wb = hb ? w[t].w : w[t].y;
      e2m1_half2_mad(wa, ra);
      e2m1_half2_mad(wb, rb);
      const float s0 = kFma ? scale_at_fma(s[t][0], 2 * jj + hb) : scale_at(s[t][0], 2 * jj + hb);
      const float s1 = kFma ? scale_at_fma(s[t][1], 2 * jj + hb) : scale_at(s[t][1], 2 * jj + hb);
      mma16::block_fma(ra, rb, hb ? f1 : f0, s0, s1, acc[t]);
    }
  }
}

// The two code words of block hb of a chunk (w.x, w.y or w.z, w.w) as the A fragments ra, rb of
// its two mma, through e2m1_half2_mad (with the staging's column pairs).
__device__ __forceinline__ void decode_block(const uint4& w, int hb, uint32_t (&ra)[4], uint32_t (&rb)[4]) {
  e2m1_half2_mad(hb ? w.z : w.x, ra);
  e2m1_half2_mad(hb ? w.w : w.y, rb);
}

// chunk with the chunk's four scales already floats (sc = row g / g + 8 of block 2j, then of
// block 2j + 1, from the warp's scale table): the same values, so the same bits.
__device__ __forceinline__ void chunk_scaled(const uint4& w, uint4 f0, uint4 f1, float4 sc, float (&acc)[4]) {
#pragma unroll
  for (int hb = 0; hb < 2; ++hb) {
    uint32_t ra[4], rb[4];
    decode_block(w, hb, ra, rb);
    mma16::block_fma(ra, rb, hb ? f1 : f0, hb ? sc.z : sc.x, hb ? sc.w : sc.y, acc);
  }
}

// One group's scales of the warp's 16-row tile into the warp's scale table, as chunk_scaled's readers take them: lane
// l holds row l / 2's bytes of blocks 4 (l % 2) .. 4 (l % 2) + 3 and writes them at dst, its slot (the table's layout
// and why: docs/CUDA.md "Fragment-order expert versions"). Same values: byte k at bits 23-30, 2^-127 for E8M0 0.
__device__ __forceinline__ void put_scales(float* dst, uint32_t word) {
  const uint32_t e0 = max((word << 23) & 0x7F800000u, 0x00400000u);
  const uint32_t e1 = max((word << 15) & 0x7F800000u, 0x00400000u);
  const uint32_t e2 = max((word << 7) & 0x7F800000u, 0x00400000u);
  const uint32_t e3 = max((word >> 1) & 0x7F800000u, 0x00400000u);
  dst[0] = __uint_as_float(e0);   // block 4h: chunk 2h, first block
  dst[2] = __uint_as_float(e1);   // block 4h + 1: chunk 2h, second block
  dst[32] = __uint_as_float(e2);  // block 4h + 2: chunk 2h + 1
  dst[34] = __uint_as_float(e3);
}

// One 64-column chunk of the tile against two pairs of vectors (fragments f0, f1 and g0, g1), the scales from the
// warp's scale table (chunk_scaled's sc): each block is decoded once and multiplied with both pairs' fragments.
// Every product, sum and scaling of a pair is the one chunk_scaled performs for it, so the bits are the same.
__device__ __forceinline__ void chunk_two_scaled(const uint4& w, uint4 f0, uint4 f1, uint4 g0, uint4 g1, float4 sc,
                                                 float (&acc)[4], float (&acc2)[4]) {
#pragma unroll
  for (int hb = 0; hb < 2; ++hb) {
    uint32_t ra[4], rb[4];
    decode_block(w, hb, ra, rb);
    const float s0 = hb ? sc.z : sc.x, s1 = hb ? sc.w : sc.y;
    mma16::block_fma(ra, rb, hb ? f1 : f0, s0, s1, acc);
    mma16::block_fma(ra, rb, hb ? g1 : g0, s0, s1, acc2);
  }
}

// The sums of one tile (mma16::slot_sums), with the gate and up tiles of an A task in different warps (the up warps
// hand theirs over through shared memory). kMax: the gate warps also fold the |h| they write into P.hmax[a]
// (atomicMax on the bits of a non-negative float: the order of the updates cannot change the result), so the down
// tasks know each vector's largest magnitude without a pass over it.
template <bool kGateUp, bool kMax = false>
__device__ __forceinline__ void finish_tile(const Params& P, const float (&acc)[4], const float (&back)[2], int aA,
                                            int aB, int o0, int warp, int lane, float* swap) {
  const int q = lane & 3, gr = lane >> 2;
  float v[2];
  mma16::slot_sums(acc, q, v);
  const int a = q == 0 ? aA : aB;
  const float bs = q ? back[1] : back[0];
  if constexpr (kGateUp) {
    float2* sw = reinterpret_cast<float2*>(swap);
    if (warp >= kWarps / 2) sw[(warp - kWarps / 2) * 32 + lane] = make_float2(v[0], v[1]);
    __syncthreads();
    if (warp < kWarps / 2) {
      float m = 0.f;
      if (q < 2 && a >= 0) {
        const float2 u = sw[warp * 32 + lane];
        const float h0 = situ_act(v[0] * bs, u.x * bs), h1 = situ_act(v[1] * bs, u.y * bs);
        P.h[static_cast<int64_t>(a) * P.inter + o0 + gr] = h0;
        P.h[static_cast<int64_t>(a) * P.inter + o0 + gr + 8] = h1;
        if constexpr (kMax) m = fmaxf(fmaxf(m, fabsf(h0)), fabsf(h1));  // as stage_frags: NaN never wins
      }
      if constexpr (kMax) {
#pragma unroll
        for (int sh = 4; sh <= 16; sh <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, sh));  // lanes of one q
        if (lane < 2 && a >= 0) atomicMax(P.hmax + a, __float_as_uint(m));
      }
    }
  } else if (q < 2 && a >= 0) {
    P.d[static_cast<int64_t>(a) * P.latent + o0 + gr] = v[0] * bs;
    P.d[static_cast<int64_t>(a) * P.latent + o0 + gr + 8] = v[1] * bs;
  }
}

// The activation fragments a block holds: a task whose vectors are the ones staged last (at T = 1
// every gate/up task reads the same row) uses them as they are.
struct Staged {
  const float* xa = nullptr;
  const float* xb = nullptr;
  float back[2] = {0.f, 0.f};
  const float* xc = nullptr;  // kNP = 2: the second pair's, in the second fragment buffer
  const float* xd = nullptr;
  float back2[2] = {0.f, 0.f};
};

// One A task (h = SiTU(gate, up)) or B task (d = down rows) for every assignment of its expert, two assignments
// (kNP = 2: up to four) per pass over the weights; each lane keeps kAhead chunks of loads in flight. No flag changes
// an assignment's arithmetic (the flags, and what each is for: docs/CUDA.md "Fragment-order expert versions"):
// kHmax (kNP = 1) gate/up tasks record max |h| (finish_tile kMax), down tasks stage h in one pass with it
// (stage_split: stage_frags' bits); kFma scales through scale_at_fma in groups without an E8M0 0 (any lane); kL
// fragment lanes per block, 24 or 32 (frag_bytes); kST scales through the warp's scale table (put_scales,
// chunk_scaled), every group but the last loading without a bound check; kU2 kST's loop two groups per step.
template <bool kGateUp, int kAhead, int kNP, bool kHmax, bool kFma, int kL, bool kST, bool kU2>
__device__ __forceinline__ void task(const Params& P, unsigned task_id, char* smem, Staged& st) {
  static_assert(kAhead >= 1 && kAhead < kRing, "a slot is read before the load that refills it is issued");
  static_assert(kNP == 1 || (kNP == 2 && kST), "two pairs per pass through the scale tables");
  static_assert(!kHmax || kNP == 1, "recorded maxima with one pair per pass");
  static_assert(!kFma || kNP == 1, "the FMA-pipe scales with one pair per pass only");
  // kST with 24 lanes: lanes 24-31 read the fragments that follow (block 2j + 1's lanes 0-7, or past the buffer's end
  // into the next one or the scale tables): they feed only output columns 6, 7 (never read): no predicate needed.
  static_assert(!kST || !kFma, "scale tables and no vote");
  static_assert(!kU2 || kST, "two groups per step is a form of the scale-table loop");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2;
  float* red = reinterpret_cast<float*>(smem);
  float* swap = reinterpret_cast<float*>(smem + kHeader);
  char* frag = smem + kHeader + kSwap;
  int grp, o0, K;
  const void* pk[NT];
  const uint8_t* sc[NT];
  int r16[NT];
  if constexpr (kGateUp) {
    grp = static_cast<int>(task_id) / P.a_tiles;
    const int tile = static_cast<int>(task_id) % P.a_tiles;
    const MxExpert e = P.experts[grp];
    K = P.latent;
    const bool up = warp >= kWarps / 2;
    o0 = tile * tile_a<NT>() + (warp % (kWarps / 2)) * 16;
    pk[0] = up ? e.up_packed : e.gate_packed;
    r16[0] = o0 / 16;
    sc[0] = static_cast<const uint8_t*>(up ? e.up_scale : e.gate_scale) + static_cast<int64_t>(o0) * (K / 32);
  } else {
    const int b = static_cast<int>(task_id - P.nA);
    grp = b / P.b_tiles;
    const int tile = b % P.b_tiles;
    const MxExpert e = P.experts[grp];
    K = P.inter;
    o0 = tile * tile_b<NT>() + warp * 16 * NT;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      pk[t] = e.down_packed;
      r16[t] = o0 / 16 + t;
      sc[t] = static_cast<const uint8_t*>(e.down_scale) + static_cast<int64_t>(o0 + 16 * t) * (K / 32);
    }
  }
  const int nch = K / 64, ngroups = nch / 4, srow = K / 32;
  const uint4* wp[NT];
  const uint2* sp[NT];  // row g's scales; row g + 8's are 8 rows further
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    wp[t] = static_cast<const uint4*>(pk[t]) + static_cast<int64_t>(r16[t]) * nch * 32 + lane;
    sp[t] = reinterpret_cast<const uint2*>(sc[t] + g * srow);
  }
  const int s8 = srow;  // uint2 units between row g and row g + 8 (8 rows of srow bytes)
  const int a0 = P.grp_begin[grp], a1 = P.grp_begin[grp + 1];
  const int npairs = (a1 - a0 + 1) / 2;
  const uint4* fr = reinterpret_cast<const uint4*>(frag);
  // kNP = 2: the second pair's buffer, at one offset for A and B tasks (each buffer only ever holds
  // what its Staged entry says).
  char* frag2 = frag + frag_bytes(P.latent, P.inter, kL);
  const uint4* fr2 = reinterpret_cast<const uint4*>(frag2);
  for (int pr = 0; pr < npairs; pr += kNP) {
    const mma16::PairVectors v1 = mma16::pair_vectors<kGateUp>(P, a0, a1, pr);
    const int aA = v1.aA, aB = v1.aB;
    const float* xA = v1.xA;
    const float* xB = v1.xB;
    const bool two = kNP == 2 && pr + 1 < npairs;  // the same for the whole block
    mma16::PairVectors v2{-1, -1, nullptr, nullptr};
    if (two) v2 = mma16::pair_vectors<kGateUp>(P, a0, a1, pr + 1);
    uint4 w[kRing][NT];
    uint2 s[NT][2];
    // kST: lane l's scale word of group 0 (row l / 2, bytes 4 (l % 2) ..)
    [[maybe_unused]] const uint32_t* sword = reinterpret_cast<const uint32_t*>(sc[0] + (lane >> 1) * srow) + (lane & 1);
    [[maybe_unused]] uint32_t sw0 = 0;
    auto first_loads = [&] {
#pragma unroll
      for (int k = 0; k < kAhead; ++k)
#pragma unroll
        for (int t = 0; t < NT; ++t) w[k][t] = ld_weights(wp[t] + k * 32);
      if constexpr (kST) {
        sw0 = __ldg(sword);
      } else {
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          s[t][0] = __ldg(sp[t]);
          s[t][1] = __ldg(sp[t] + s8);
        }
      }
    };
    // Weights do not depend on the activations: their first loads go out before the staging.
    first_loads();
    const bool stage1 = st.xa != xA || st.xb != xB, stage2 = two && (st.xc != v2.xA || st.xd != v2.xB);
    if (stage1 || stage2) {
      __syncthreads();  // every warp is done with the previous fragments
      if (stage1) {
        if constexpr (kHmax && !kGateUp) {
          // Written by this launch's gate/up tasks before they signalled: L2 only.
          const float mA = __uint_as_float(__ldcg(P.hmax + aA)),
                      mB = aB >= 0 ? __uint_as_float(__ldcg(P.hmax + aB)) : 0.f;
          mma16::stage_split<true, kL, true>(frag, xA, xB, K, mA, mB, st.back);
        } else {
          mma16::stage_frags<!kGateUp, kL, true>(frag, red, xA, xB, K,
                                                 st.back);  // h was written by this launch: L2 only
        }
        st.xa = xA;
        st.xb = xB;
      }
      if (stage2) {
        mma16::stage_frags<!kGateUp, kL, true>(frag2, red, v2.xA, v2.xB, K, st.back2);
        st.xc = v2.xA;
        st.xd = v2.xB;
      }
    }
    const float back[2] = {st.back[0], st.back[1]};
    // The pass over the tile, for one pair (kTwo false) or two: separate code, so that a pass with one
    // pair pays nothing for the second (passes with two exist only where rows share experts).
    auto pass = [&](auto two_c) {
      constexpr bool kTwo = decltype(two_c)::value;
      float acc[NT][4], acc2[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
      if constexpr (kST) {
        // The warp's two scale buffers (lane l's word of group G: row l / 2's bytes 8 G + 4 (l % 2) ..),
        // this lane's slot in buffer 0 (put_scales) and its lane row's first float4 (chunk_scaled)
        float* stab = reinterpret_cast<float*>(frag + kNP * frag_bytes(P.latent, P.inter, kL)) + warp * 256;
        float* sdst = stab + ((2 * (lane & 1)) * 8 + ((lane >> 1) & 7)) * 4 + (lane >> 4);
        const float4* sget = reinterpret_cast<const float4*>(stab) + g;
        put_scales(sdst, sw0);
        __syncwarp();
        const uint4* wq = wp[0] + kAhead * 32;           // the load 3 chunks ahead of the group's first chunk
        const uint32_t* sq = sword + 2;                  // the next group's scale word
        const uint4* fq = fr + lane;                     // the group's first activation fragment
        [[maybe_unused]] const uint4* fq2 = fr2 + lane;  // kTwo: the second pair's
        auto group = [&](int G, auto last_c) {
          constexpr bool kLast = decltype(last_c)::value;  // the tile's last group: no loads beyond it
          const uint32_t wn = kLast ? 0u : __ldg(sq);
          const float4* tg = sget + (G & 1) * 32;
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            if (!kLast || jj + kAhead < 4) w[(jj + kAhead) % kRing][0] = ld_weights(wq + jj * 32);
            const uint4 f0 = fq[(2 * jj) * kL], f1 = fq[(2 * jj + 1) * kL];
            if constexpr (kTwo) {
              const uint4 g0 = fq2[(2 * jj) * kL], g1 = fq2[(2 * jj + 1) * kL];
              chunk_two_scaled(w[jj][0], f0, f1, g0, g1, tg[jj * 8], acc[0], acc2);
            } else {
              chunk_scaled(w[jj][0], f0, f1, tg[jj * 8], acc[0]);
            }
          }
          if constexpr (!kLast) put_scales(sdst + ((G + 1) & 1) * 128, wn);
          __syncwarp();  // the table half written here is read by the next group; the other was read here
          wq += 4 * 32;
          sq += 2;
          fq += 8 * kL;
          if constexpr (kTwo) fq2 += 8 * kL;
        };
        if constexpr (kU2) {
          // Pairs of groups while at least three remain, then the one or two left (the last apart).
          int G = 0;
#pragma unroll 1
          for (; G + 2 < ngroups; G += 2) {
            group(G, std::false_type{});
            group(G + 1, std::false_type{});
          }
          if (G + 1 < ngroups) group(G++, std::false_type{});
          group(G, std::true_type{});
        } else {
#pragma unroll 1
          for (int G = 0; G + 1 < ngroups; ++G) group(G, std::false_type{});
          group(ngroups - 1, std::true_type{});
        }
      } else {
#pragma unroll 1
        for (int G = 0; G < ngroups; ++G) {
          uint2 sn[NT][2];
          if (G + 1 < ngroups) {
#pragma unroll
            for (int t = 0; t < NT; ++t) {
              sn[t][0] = __ldg(sp[t] + G + 1);
              sn[t][1] = __ldg(sp[t] + s8 + G + 1);
            }
          }
          auto chunks = [&](auto fma_c) {
            [[maybe_unused]] constexpr bool kF = decltype(fma_c)::value;
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) {
              const int j = 4 * G + jj;
              if (j + kAhead < nch) {
#pragma unroll
                for (int t = 0; t < NT; ++t) w[(jj + kAhead) % kRing][t] = ld_weights(wp[t] + (j + kAhead) * 32);
              }
              uint4 f0 = make_uint4(0u, 0u, 0u, 0u), f1 = f0;
              if (lane < kL) {
                f0 = fr[(2 * j) * kL + lane];
                f1 = fr[(2 * j + 1) * kL + lane];
              }
              chunk<kF>(w[jj], f0, f1, s, jj, acc);
            }
          };
          if constexpr (kFma) {
            if (any_zero_scale(s)) chunks(std::false_type{});
            else chunks(std::true_type{});
          } else {
            chunks(std::false_type{});
          }
          if (G + 1 < ngroups) {
#pragma unroll
            for (int t = 0; t < NT; ++t) {
              s[t][0] = sn[t][0];
              s[t][1] = sn[t][1];
            }
          }
        }
      }
      finish_tile<kGateUp, kHmax>(P, acc[0], back, aA, aB, o0, warp, lane, swap);
      if constexpr (kTwo) {
        if constexpr (kGateUp) __syncthreads();  // the gate warps have read the first pair's swap
        const float back2[2] = {st.back2[0], st.back2[1]};
        finish_tile<kGateUp>(P, acc2, back2, v2.aA, v2.aB, o0, warp, lane, swap);
      }
    };
    if constexpr (kNP == 2) {
      if (two) pass(std::true_type{});
      else pass(std::false_type{});
    } else {
      pass(std::false_type{});
    }
  }
}

// Permutes one packed matrix into fragment order (docs/CUDA.md "Fragment-order expert versions"):
// thread i writes lane i % 32 of piece i / 32.
__global__ void repack_kernel(const uint32_t* __restrict__ src, uint4* __restrict__ dst, int rows, int cols) {
  const int nch = cols / 64, wpr = cols / 8;  // chunks per tile, 32-bit words per row
  const int64_t n = static_cast<int64_t>(rows / 16) * nch * 32;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(i & 31);
    const int64_t piece = i >> 5;
    const int64_t r16 = piece / nch;
    const int c = static_cast<int>(piece % nch);
    const int64_t row = r16 * 16 + (lane >> 2);
    const uint32_t* r0 = src + row * wpr + (lane & 3);
    const uint32_t* r8 = r0 + 8 * static_cast<int64_t>(wpr);
    dst[i] = make_uint4(r0[8 * c], r8[8 * c], r0[8 * c + 4], r8[8 * c + 4]);
  }
}

}  // namespace direct

// The fragment-order versions: same tickets and tasks as expert_mlp_kernel, two blocks per SM. kMeta: the call's
// routing tables are copied into shared memory once per block, so a task's first reads are shared-memory reads
// instead of a chain of dependent global loads (for calls whose tables exceed MetaTables, launch() runs the version
// without it: the same bits). kFuse: no combine tasks; the down task that completes a row's tile combines it
// (finish_down_fused; the host sets P.nC = 0). kHmax, kFma, kL, kST, kU2: see task().
template <int kAhead, int kNP, bool kMeta, bool kHmax, bool kFma, int kL, bool kFuse, bool kST, bool kU2>
__global__ void __launch_bounds__(kThreads, 2) expert_mlp_direct_kernel(const Params P) {
  pdl_enter();
  extern __shared__ __align__(128) char smem[];
  direct::Staged st;
  auto body = [&](const Params& Q) {
    run_tickets<kHmax, kFuse>(
        Q,
        [&](unsigned task, int, int) { direct::task<true, kAhead, kNP, kHmax, kFma, kL, kST, kU2>(Q, task, smem, st); },
        [&](unsigned task, int, int) {
          direct::task<false, kAhead, kNP, kHmax, kFma, kL, kST, kU2>(Q, task, smem, st);
        });
  };
  if constexpr (kMeta) {
    body(copy_tables(P));
  } else {
    body(P);
  }
}
