// The lab's FFMA expert tasks: the plain (mode 0) and exact-shape (modes 2 and 3: v9, v62, v68 and
// their siblings) versions, which choose_expert_kernel reaches on no GPU the product builds for (K3's
// widths are stored in fragment order on every sm_80+ GPU). Included by lab/expert_kernels_lab.cu
// inside its anonymous namespace, after expert_tasks.cuh (Params, the task scheme, chunk_acc). Also
// the diagnostics and decodes only lab versions use: per-task traces (set_expert_trace, the traced
// versions' run_tickets_lab), e2m1_half2_fma and ld_stream16_l2.

// Diagnostics (set_expert_trace): where a traced version writes, per task, five words: (SM << 32) |
// block, then %globaltimer at the task's start, after its waits, once its first pass is ready to
// stream (activation fragments staged), and at its end. Null: nothing is written.
__device__ unsigned long long* g_expert_trace = nullptr;
constexpr int kTraceWords = 5;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Word i of task `task`'s record (thread 0 of the block only).
// kind (word 0, with i == 1): 0 gate/up, 1 down, 2 combine, so the reader needs no tile sizes.
__device__ __forceinline__ void trace_at(unsigned task, int i, unsigned kind = 0) {
  unsigned long long* r = g_expert_trace;
  if (r) {
    if (i == 1) {
      unsigned smid;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
      r[static_cast<size_t>(task) * kTraceWords] =
          (static_cast<unsigned long long>(kind) << 62) | (static_cast<unsigned long long>(smid) << 32) | blockIdx.x;
    }
    r[static_cast<size_t>(task) * kTraceWords + i] = global_ns();
  }
}

// e2m1_half2's words, bit for bit, with less integer-pipe work. Why: at K3's shapes the fragment-
// order kernels issue about 60 integer-pipe instructions per 512 bytes of weights, and that pipe
// (half the FMA pipe's rate) was the busiest one, 62-70% of cycles, with DRAM at 53% (ncu on the
// H200). Here the shifts are multiplies (the FMA pipe) and each
// nibble's sign reaches bit 7 of its byte by a carry: for a byte holding 2c (c = s|e1 e0 m),
// 2c + 0x70 has bit 7 = s and bits 1-3 = e1 e0 m, and the mask drops bits 4-6 (2c + 0x70 <= 0x8E:
// never a carry out of the byte). ptxas makes 8-9 integer-pipe instructions of it per word, not 11.
__device__ __forceinline__ void e2m1_half2_fma(uint32_t w, uint32_t (&h)[4]) {
  const uint32_t lo = w & 0x0F0F0F0Fu;  // even columns, one code per byte
  const uint32_t hi = w - lo;           // odd columns, code x 16 per byte
  const uint32_t ev = (lo * 2u + 0x70707070u) & 0x8E8E8E8Eu;
  const uint32_t od = (__umulhi(hi, 1u << 29) + 0x70707070u) & 0x8E8E8E8Eu;  // hi / 8: code x 2 per byte
  h[0] = __byte_perm(ev, 0u, 0x1404);
  h[1] = __byte_perm(ev, 0u, 0x3424);
  h[2] = __byte_perm(od, 0u, 0x1404);
  h[3] = __byte_perm(od, 0u, 0x3424);
}

// ld_stream16 with an L2 prefetch hint: L2 fetches the whole 256-byte segment around the 16 bytes.
__device__ __forceinline__ uint4 ld_stream16_l2(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// expert_tasks.cuh's run_tickets with kTrace: thread 0 writes each task's start, wait and end times
// (trace_at; the task itself writes when it is ready to stream). The traced versions' loop.
// kHmax: the combine tasks clear P.hmax (finish_tile kMax).
// kFuse (ExpertVariant::fused_combine): no combine tasks (P.nC = 0); each down task ends in finish_down_fused.
template <bool kTrace = false, bool kHmax = false, bool kFuse = false, class GateUp, class Down>
__device__ __forceinline__ void run_tickets_lab(const Params& P, GateUp&& gate_up, Down&& down) {
  __shared__ unsigned s_task;
  const unsigned total = P.nA + P.nB + P.nC;
  if (threadIdx.x == 0) s_task = take_ticket(P);
  __syncthreads();
  unsigned task = s_task;
  while (task < total) {
    __syncthreads();  // everyone has read s_task
    unsigned after = 0u;
    if (threadIdx.x == 0) after = take_ticket(P);
    if constexpr (kTrace) {
      if (threadIdx.x == 0) trace_at(task, 1, task < P.nA ? 0u : task < P.nA + P.nB ? 1u : 2u);
    }
    if (task < P.nA) {
      const int g = static_cast<int>(task) / P.a_tiles;
      if constexpr (kTrace) {
        if (threadIdx.x == 0) trace_at(task, 2);
      }
      gate_up(task, g, static_cast<int>(task) % P.a_tiles);
      signal_done(P.doneA + g);
    } else if (task < P.nA + P.nB) {
      const int b = static_cast<int>(task - P.nA);
      const int g = b / P.b_tiles;
      if (threadIdx.x == 0) wait_expert_a(P, g);
      __syncthreads();
      if constexpr (kTrace) {
        if (threadIdx.x == 0) trace_at(task, 2);
      }
      down(task, g, b % P.b_tiles);
      if constexpr (kFuse) finish_down_fused<kHmax>(P, g, b % P.b_tiles);
      else signal_done(P.doneB + g);
    } else {
      const int c = static_cast<int>(task - P.nA - P.nB);
      const int t = c / P.c_tiles;
      if (threadIdx.x == 0) wait_row_experts(P, t);
      __syncthreads();
      if constexpr (kTrace) {
        if (threadIdx.x == 0) {
          trace_at(task, 2);
          trace_at(task, 3);
        }
      }
      task_combine<kThreads, kHmax>(P, t, c % P.c_tiles);
    }
    if constexpr (kTrace) {
      if (threadIdx.x == 0) trace_at(task, 4);
    }
    if (threadIdx.x == 0) s_task = after;
    __syncthreads();
    task = s_task;
  }
}

// e2m1_half2 as floats: the 8 column values of one word (times 2^-14) in column order, so that
// several vectors can use one decode (the fp16 -> fp32 conversions are a fifth of the work otherwise).
__device__ __forceinline__ void decode8(uint32_t w, float* f) {
  uint32_t h[4];
  e2m1_half2(w, h);
  const float2 c02 = h2f(h[0]), c46 = h2f(h[1]), c13 = h2f(h[2]), c57 = h2f(h[3]);
  f[0] = c02.x, f[1] = c13.x, f[2] = c02.y, f[3] = c13.y;
  f[4] = c46.x, f[5] = c57.x, f[6] = c46.y, f[7] = c57.y;
}

// chunk_acc over decoded columns: the same products in the same order, so the same bits.
__device__ __forceinline__ float chunk_acc_decoded(const float* f, float scale, const X16& x, float acc) {
  const float xv[16] = {x.a.x, x.a.y, x.a.z, x.a.w, x.b.x, x.b.y, x.b.z, x.b.w,
                        x.c.x, x.c.y, x.c.z, x.c.w, x.d.x, x.d.y, x.d.z, x.d.w};
  float p = 0.f;
#pragma unroll
  for (int j = 0; j < 16; ++j) p = __fmaf_rn(f[j], xv[j], p);
  return __fmaf_rn(p * 16384.0f, scale, acc);
}

// Gate and up rows [o, o + RO) of expert g for all of its assignments, NA assignments per pass
// over the weights. Lane l reads chunks l, l + 32, ... of each row in order (the reduction order).
template <int RO, int NA, int U>
__device__ __forceinline__ void task_gate_up(const Params& P, int g, int tile) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const MxExpert e = P.experts[g];
  const int nch = P.latent / 16;  // 8-byte chunks per row
  const int nblk = P.latent / 32;
  const uint2* gp = static_cast<const uint2*>(e.gate_packed);
  const uint2* up = static_cast<const uint2*>(e.up_packed);
  const uint8_t* gs = static_cast<const uint8_t*>(e.gate_scale);
  const uint8_t* us = static_cast<const uint8_t*>(e.up_scale);
  const int a0 = P.grp_begin[g], a1 = P.grp_begin[g + 1];
  const int o_end = min(P.inter, (tile + 1) * P.tile_a);
  for (int o0 = tile * P.tile_a + warp * RO; o0 < o_end; o0 += kWarps * RO) {
    for (int ab = a0; ab < a1; ab += NA) {
      const int na = min(NA, a1 - ab);
      const float* zr[NA];
      float ag[NA][RO], au[NA][RO];
#pragma unroll
      for (int i = 0; i < NA; ++i) {
        zr[i] = P.z + static_cast<int64_t>(P.assign_list[ab + (i < na ? i : 0)] / P.K) * P.latent;
#pragma unroll
        for (int r = 0; r < RO; ++r) ag[i][r] = au[i][r] = 0.f;
      }
#pragma unroll U
      for (int c = lane; c < nch; c += 32) {
        uint2 wg[RO], wu[RO];
        uint32_t sg[RO], su[RO];
#pragma unroll
        for (int r = 0; r < RO; ++r) {
          const int o = min(o0 + r, o_end - 1);
          wg[r] = __ldg(gp + static_cast<int64_t>(o) * nch + c);
          wu[r] = __ldg(up + static_cast<int64_t>(o) * nch + c);
          sg[r] = __ldg(gs + static_cast<int64_t>(o) * nblk + c / 2);
          su[r] = __ldg(us + static_cast<int64_t>(o) * nblk + c / 2);
        }
#pragma unroll
        for (int i = 0; i < NA; ++i) {
          if (i >= na) break;
          const X16 x = load_x16<false>(zr[i] + c * 16);
#pragma unroll
          for (int r = 0; r < RO; ++r) {
            ag[i][r] = chunk_acc(wg[r], sg[r], x, ag[i][r]);
            au[i][r] = chunk_acc(wu[r], su[r], x, au[i][r]);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < NA; ++i) {
        if (i >= na) break;
        const int a = P.assign_list[ab + i];
#pragma unroll
        for (int r = 0; r < RO; ++r) {
          const float gsum = warp_sum(ag[i][r]);
          const float usum = warp_sum(au[i][r]);
          if (lane == 0 && o0 + r < o_end) P.h[static_cast<int64_t>(a) * P.inter + o0 + r] = situ_act(gsum, usum);
        }
      }
    }
  }
}

// Down rows [o, o + RB) of expert g for all of its assignments.
template <int RB, int NA, int U>
__device__ __forceinline__ void task_down(const Params& P, int g, int tile) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const MxExpert e = P.experts[g];
  const int nch = P.inter / 16;
  const int nblk = P.inter / 32;
  const uint2* dp = static_cast<const uint2*>(e.down_packed);
  const uint8_t* ds = static_cast<const uint8_t*>(e.down_scale);
  const int a0 = P.grp_begin[g], a1 = P.grp_begin[g + 1];
  const int o_end = min(P.latent, (tile + 1) * P.tile_b);
  for (int o0 = tile * P.tile_b + warp * RB; o0 < o_end; o0 += kWarps * RB) {
    for (int ab = a0; ab < a1; ab += NA) {
      const int na = min(NA, a1 - ab);
      const float* hr[NA];
      float acc[NA][RB];
#pragma unroll
      for (int i = 0; i < NA; ++i) {
        hr[i] = P.h + static_cast<int64_t>(P.assign_list[ab + (i < na ? i : 0)]) * P.inter;
#pragma unroll
        for (int r = 0; r < RB; ++r) acc[i][r] = 0.f;
      }
#pragma unroll U
      for (int c = lane; c < nch; c += 32) {
        uint2 wd[RB];
        uint32_t sd[RB];
#pragma unroll
        for (int r = 0; r < RB; ++r) {
          const int o = min(o0 + r, o_end - 1);
          wd[r] = __ldg(dp + static_cast<int64_t>(o) * nch + c);
          sd[r] = __ldg(ds + static_cast<int64_t>(o) * nblk + c / 2);
        }
#pragma unroll
        for (int i = 0; i < NA; ++i) {
          if (i >= na) break;
          const X16 x = load_x16<true>(hr[i] + c * 16);  // h was written by this launch: skip L1
#pragma unroll
          for (int r = 0; r < RB; ++r) acc[i][r] = chunk_acc(wd[r], sd[r], x, acc[i][r]);
        }
      }
#pragma unroll
      for (int i = 0; i < NA; ++i) {
        if (i >= na) break;
        const int a = P.assign_list[ab + i];
#pragma unroll
        for (int r = 0; r < RB; ++r) {
          const float sum = warp_sum(acc[i][r]);
          if (lane == 0 && o0 + r < o_end) P.d[static_cast<int64_t>(a) * P.latent + o0 + r] = sum;
        }
      }
    }
  }
}

// Exact-shape versions (chunks per lane known at compile time, as for K3's 3584 and 3072): the
// chunk loop is unrolled so every load uses an immediate offset from a per-row pointer, the next
// chunk's weights are in flight while the current one is computed (also across row passes), x is
// staged once per task in shared memory (lane-major, conflict-free), and weights bypass L1. Same
// per-lane order as the versions above, so results are bit-identical to them.
__device__ __forceinline__ uint2 ld_stream(const uint2* p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

// x[c*16 .. c*16+15] for chunk c = lane + 32k lives at float4 slots ((k*4 + j)*32 + lane), j < 4.
template <bool kCoherent>
__device__ __forceinline__ void stage_x(float4* xs, const float* x, int width) {
  const float4* src = reinterpret_cast<const float4*>(x);
  for (int f = threadIdx.x; f < width / 4; f += kThreads) {
    const int c = f >> 2, j = f & 3;
    xs[((c >> 5) * 4 + j) * 32 + (c & 31)] = kCoherent ? __ldcg(src + f) : __ldg(src + f);
  }
}

__device__ __forceinline__ X16 x_from_smem(const float4* xs, int k, int lane) {
  const float4* b = xs + k * 128 + lane;
  return X16{b[0], b[32], b[64], b[96]};
}

// Streams R rows (row r at packed rw[r], scales rs[r]; pointers already offset for this lane)
// through NK chunks, adding into acc. `next_w/next_s` are the following pass's rows, prefetched
// during the last chunk; `cur` holds chunk 0 of this pass on entry and chunk 0 of the next on exit.
// NV > 1: the first nv of NV vectors (staged xstride float4 apart) against the same weights, each
// summed exactly as alone (the weights are read once for all of them).
template <int R, int NK, int NV, bool kHoist = false>
__device__ __forceinline__ void rows_pass(const uint2* const (&rw)[R], const uint8_t* const (&rs)[R],
                                          const uint2* const (&nw)[R], const uint8_t* const (&ns)[R], Step<R>& cur,
                                          const float4* xs, int xstride, int nv, int lane, float (&acc)[NV][R]) {
#pragma unroll
  for (int k = 0; k < NK; ++k) {
    Step<R> nxt;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (k + 1 < NK) {
        nxt.w[r] = ld_stream(rw[r] + 32 * (k + 1));
        nxt.s[r] = __ldg(rs[r] + 16 * (k + 1));
      } else {
        nxt.w[r] = ld_stream(nw[r]);
        nxt.s[r] = __ldg(ns[r]);
      }
    }
    if constexpr (kHoist) {
      float f[R][16], sc[R];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        decode8(cur.w[r].x, f[r]);
        decode8(cur.w[r].y, f[r] + 8);
        sc[r] = e8m0(cur.s[r]);
      }
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        if (v < nv) {
          const X16 x = x_from_smem(xs + v * xstride, k, lane);
#pragma unroll
          for (int r = 0; r < R; ++r) acc[v][r] = chunk_acc_decoded(f[r], sc[r], x, acc[v][r]);
        }
      }
    } else {
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        if (v > 0 && v >= nv) break;
        const X16 x = x_from_smem(xs + v * xstride, k, lane);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[v][r] = chunk_acc(cur.w[r], cur.s[r], x, acc[v][r]);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      cur.w[r] = nxt.w[r];
      cur.s[r] = nxt.s[r];
    }
  }
}

template <int RO, int NK, int NV, bool kHoist = false>
__device__ __forceinline__ void task_gate_up_exact(const Params& P, int g, int tile, float4* xs) {
  constexpr int R = 2 * RO;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const MxExpert e = P.experts[g];
  constexpr int nch = NK * 32, nblk = NK * 16;
  const uint2* gp = static_cast<const uint2*>(e.gate_packed) + lane;
  const uint2* up = static_cast<const uint2*>(e.up_packed) + lane;
  const uint8_t* gs = static_cast<const uint8_t*>(e.gate_scale) + lane / 2;
  const uint8_t* us = static_cast<const uint8_t*>(e.up_scale) + lane / 2;
  const int first = tile * P.tile_a + warp * RO, stride = kWarps * RO;
  const int o_end = min(P.inter, (tile + 1) * P.tile_a);
  const int xstride = P.latent / 4;
  for (int ab = P.grp_begin[g]; ab < P.grp_begin[g + 1]; ab += NV) {
    const int nv = min(NV, P.grp_begin[g + 1] - ab);
    __syncthreads();  // the previous assignments' readers are done with xs
    for (int v = 0; v < nv; ++v)
      stage_x<false>(xs + v * xstride, P.z + static_cast<int64_t>(P.assign_list[ab + v] / P.K) * P.latent, P.latent);
    __syncthreads();
    if (first >= o_end) continue;
    auto row_ptrs = [&](int o0, const uint2*(&w)[R], const uint8_t*(&sc)[R]) {
#pragma unroll
      for (int r = 0; r < RO; ++r) {
        const int o = min(o0 + r, o_end - 1);  // a short last pass recomputes a valid row, unstored
        w[r] = gp + static_cast<int64_t>(o) * nch;
        w[RO + r] = up + static_cast<int64_t>(o) * nch;
        sc[r] = gs + static_cast<int64_t>(o) * nblk;
        sc[RO + r] = us + static_cast<int64_t>(o) * nblk;
      }
    };
    const uint2* rw[R];
    const uint8_t* rs[R];
    row_ptrs(first, rw, rs);
    Step<R> cur;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      cur.w[r] = ld_stream(rw[r]);
      cur.s[r] = __ldg(rs[r]);
    }
#pragma unroll 1
    for (int o0 = first; o0 < o_end; o0 += stride) {
      const uint2* nw[R];
      const uint8_t* ns[R];
      row_ptrs(o0 + stride < o_end ? o0 + stride : o0, nw, ns);
      float acc[NV][R];
#pragma unroll
      for (int v = 0; v < NV; ++v)
#pragma unroll
        for (int r = 0; r < R; ++r) acc[v][r] = 0.f;
      rows_pass<R, NK, NV, kHoist>(rw, rs, nw, ns, cur, xs, xstride, nv, lane, acc);
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        if (v > 0 && v >= nv) break;
        const int a = P.assign_list[ab + v];
#pragma unroll
        for (int r = 0; r < RO; ++r) {
          const float gsum = warp_sum(acc[v][r]);
          const float usum = warp_sum(acc[v][RO + r]);
          if (lane == 0 && o0 + r < o_end) P.h[static_cast<int64_t>(a) * P.inter + o0 + r] = situ_act(gsum, usum);
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        rw[r] = nw[r];
        rs[r] = ns[r];
      }
    }
  }
}

template <int RB, int NK, int NV, bool kHoist = false>
__device__ __forceinline__ void task_down_exact(const Params& P, int g, int tile, float4* xs) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const MxExpert e = P.experts[g];
  constexpr int nch = NK * 32, nblk = NK * 16;
  const uint2* dp = static_cast<const uint2*>(e.down_packed) + lane;
  const uint8_t* ds = static_cast<const uint8_t*>(e.down_scale) + lane / 2;
  const int first = tile * P.tile_b + warp * RB, stride = kWarps * RB;
  const int o_end = min(P.latent, (tile + 1) * P.tile_b);
  const int xstride = P.inter / 4;
  for (int ab = P.grp_begin[g]; ab < P.grp_begin[g + 1]; ab += NV) {
    const int nv = min(NV, P.grp_begin[g + 1] - ab);
    __syncthreads();
    for (int v = 0; v < nv; ++v)  // written by this launch: L2 only
      stage_x<true>(xs + v * xstride, P.h + static_cast<int64_t>(P.assign_list[ab + v]) * P.inter, P.inter);
    __syncthreads();
    if (first >= o_end) continue;
    auto row_ptrs = [&](int o0, const uint2*(&w)[RB], const uint8_t*(&sc)[RB]) {
#pragma unroll
      for (int r = 0; r < RB; ++r) {
        const int o = min(o0 + r, o_end - 1);
        w[r] = dp + static_cast<int64_t>(o) * nch;
        sc[r] = ds + static_cast<int64_t>(o) * nblk;
      }
    };
    const uint2* rw[RB];
    const uint8_t* rs[RB];
    row_ptrs(first, rw, rs);
    Step<RB> cur;
#pragma unroll
    for (int r = 0; r < RB; ++r) {
      cur.w[r] = ld_stream(rw[r]);
      cur.s[r] = __ldg(rs[r]);
    }
#pragma unroll 1
    for (int o0 = first; o0 < o_end; o0 += stride) {
      const uint2* nw[RB];
      const uint8_t* ns[RB];
      row_ptrs(o0 + stride < o_end ? o0 + stride : o0, nw, ns);
      float acc[NV][RB];
#pragma unroll
      for (int v = 0; v < NV; ++v)
#pragma unroll
        for (int r = 0; r < RB; ++r) acc[v][r] = 0.f;
      rows_pass<RB, NK, NV, kHoist>(rw, rs, nw, ns, cur, xs, xstride, nv, lane, acc);
#pragma unroll
      for (int v = 0; v < NV; ++v) {
        if (v > 0 && v >= nv) break;
        const int a = P.assign_list[ab + v];
#pragma unroll
        for (int r = 0; r < RB; ++r) {
          const float sum = warp_sum(acc[v][r]);
          if (lane == 0 && o0 + r < o_end) P.d[static_cast<int64_t>(a) * P.latent + o0 + r] = sum;
        }
      }
#pragma unroll
      for (int r = 0; r < RB; ++r) {
        rw[r] = nw[r];
        rs[r] = ns[r];
      }
    }
  }
}

// Mode 0: plain, 2: exact (chunks per lane NK1 / NK2; NA activation vectors per pass over the
// weights, each summed as alone), 3: exact with each chunk decoded once for all NA vectors (the same
// bits as 2). Mode 1 (streamed, any shape) is the product's expert_mlp_kernel.
template <int RO, int RB, int NA, int U, int kMinBlocks, int kMode, int NK1 = 0, int NK2 = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks) expert_mlp_lab_kernel(const Params P) {
  pdl_enter();
  // 128-byte aligned: where the staged vectors started when these kernels were measured (a file
  // whose other kernels align their dynamic shared memory to 128 gave them that base).
  extern __shared__ __align__(128) float4 xs[];
  run_tickets(
      P,
      [&](unsigned, int g, int tile) {
        if constexpr (kMode >= 2) task_gate_up_exact<RO, NK1, NA, kMode == 3>(P, g, tile, xs);
        else if constexpr (kMode == 1) task_gate_up_streamed<RO>(P, g, tile);
        else task_gate_up<RO, NA, U>(P, g, tile);
      },
      [&](unsigned, int g, int tile) {
        if constexpr (kMode >= 2) task_down_exact<RB, NK2, NA, kMode == 3>(P, g, tile, xs);
        else if constexpr (kMode == 1) task_down_streamed<RB>(P, g, tile);
        else task_down<RB, NA, U>(P, g, tile);
      });
}
