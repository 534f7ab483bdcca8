// The routed-expert MLP of one MoE layer in one launch (MXFP4 weights, fp32 everything else): a persistent grid takes
// gate/up (A), down (B) and combine (C) tasks in ticket order, each waiting only for lower tickets (no deadlock). The
// scheme, its exactness and batch invariance: docs/CUDA.md "Routed experts". Included by mxfp4_experts.cu and
// lab/expert_kernels_lab.cu, each in its own anonymous namespace.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "cuda/cuda_common.cuh"
#include "cuda/lab/expert_routing.cuh"
#include "cuda/lab/expert_geometry.h"

namespace deltafin::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileC = 1024;       // latent columns per C task
constexpr unsigned kFewWaves = 5;  // expert_grid: the most waves of tasks a call may have to take fewer blocks

struct Params {
  const MxExpert* experts;
  const int* grp_begin;    // [nG + 1] into assign_list
  const int* assign_list;  // assignments (t * K + j) grouped by distinct expert
  const int* slot_group;   // [T * K] distinct-expert index of each slot
  const float* slot_weight;
  const float* z;
  float* y;
  float* h;
  float* d;
  // Counters are never reset between calls: each call knows where its own counts start (so no
  // memset precedes the launch). Comparisons are wrap-safe.
  unsigned* ticket;
  unsigned* doneA;
  unsigned* doneB;
  unsigned ticket_base;        // ticket value when this call starts
  const unsigned* doneA_base;  // [nG] doneA / doneB values when this call starts
  const unsigned* doneB_base;
  int nG, T, K, latent, inter;
  int tile_a, tile_b;  // intermediate rows per A task, latent rows per B task
  int a_tiles, b_tiles, c_tiles;
  unsigned nA, nB, nC;
  // hmax versions (ExpertVariant::hmax): per assignment, the bits of max |h|; null for the others. 0 between calls:
  // each row's combine tasks (fused: each expert's last down task) clear its entries after every reader is done.
  unsigned* hmax;
  // Fused-combine versions (ExpertVariant::fused_combine): per row t and down tile, how many of the row's slots have
  // that tile done; the task that brings a count to K combines the tile and sets it back to 0 (0 between calls).
  unsigned* rowdone;
};

__device__ __forceinline__ float e8m0(uint32_t s) {
  return s ? __uint_as_float(s << 23) : __uint_as_float(0x00400000u);
}

__device__ __forceinline__ float2 h2f(uint32_t v) {
  __half2 h;
  memcpy(&h, &v, 4);
  return __half22float2(h);
}

// 8 codes (one 32-bit word, code i = nibble i) -> four half2 of E2M1 x 2^-14: (c0,c2) (c4,c6) (c1,c3) (c5,c7).
// Code s|e1 e0 m becomes the fp16 whose high byte is s000 e1 e0 m 0, exactly E2M1 x 2^-14 (e = 0 lands on fp16
// subnormals, which makes 0 and 0.5 right). One byte permute per half2; users restore 2^14.
__device__ __forceinline__ void e2m1_half2(uint32_t w, uint32_t (&h)[4]) {
  const uint32_t ev = ((w << 1) & 0x0E0E0E0Eu) | ((w << 4) & 0x80808080u);  // even columns (low nibbles)
  const uint32_t od = ((w >> 3) & 0x0E0E0E0Eu) | (w & 0x80808080u);         // odd columns (high nibbles)
  h[0] = __byte_perm(ev, 0u, 0x1404);
  h[1] = __byte_perm(ev, 0u, 0x3424);
  h[2] = __byte_perm(od, 0u, 0x1404);
  h[3] = __byte_perm(od, 0u, 0x3424);
}

// Multipliers of e2m1_half2_mad, in constant memory so that ptxas cannot see them as shifts: it turns multiplies by
// visible powers of two into LEA / shifts on the integer pipe, which is the one this decode relieves.
__constant__ uint32_t kMadMul[3] = {2u, 512u, 32u};

// e2m1_half2's fp16 codes with the columns paired (c0,c4) (c2,c6) (c1,c5) (c3,c7): one multiply-add and one mask
// per half2, no byte permute; per byte 2c + 0x70 <= 0x8E never carries out (the derivation: docs/CUDA.md "Routed
// experts"). Callers stage the activations in this column order (stage_split kMadOrder).
__device__ __forceinline__ void e2m1_half2_mad(uint32_t w, uint32_t (&h)[4]) {
  const uint32_t lo = w & 0x0F0F0F0Fu;                          // [c0 c2 c4 c6]
  const uint32_t hi = w & 0xF0F0F0F0u;                          // [16c1 16c3 16c5 16c7]
  h[0] = (lo * kMadMul[1] + 0x70707000u) & 0x8E008E00u;         // (c0, c4)
  h[1] = (lo * kMadMul[0] + 0x70707070u) & 0x8E008E00u;         // (c2, c6)
  h[2] = (hi * kMadMul[2] + 0x70707000u) & 0x8E008E00u;         // (c1, c5)
  h[3] = (__umulhi(hi, 1u << 29) + 0x70707070u) & 0x8E008E00u;  // (c3, c7): hi / 8 = 2c per byte
}

// Sum over the 8 columns held by one 32-bit word of packed codes, times 2^-14, in column order.
__device__ __forceinline__ float dot8(uint32_t w, float4 xa, float4 xb, float p) {
  uint32_t h[4];
  e2m1_half2(w, h);
  const float2 c02 = h2f(h[0]), c46 = h2f(h[1]), c13 = h2f(h[2]), c57 = h2f(h[3]);
  p = __fmaf_rn(c02.x, xa.x, p);
  p = __fmaf_rn(c13.x, xa.y, p);
  p = __fmaf_rn(c02.y, xa.z, p);
  p = __fmaf_rn(c13.y, xa.w, p);
  p = __fmaf_rn(c46.x, xb.x, p);
  p = __fmaf_rn(c57.x, xb.y, p);
  p = __fmaf_rn(c46.y, xb.z, p);
  p = __fmaf_rn(c57.y, xb.w, p);
  return p;
}

struct X16 {
  float4 a, b, c, d;
};

template <bool kCoherent>
__device__ __forceinline__ X16 load_x16(const float* p) {
  const float4* q = reinterpret_cast<const float4*>(p);
  if constexpr (kCoherent) return X16{__ldcg(q), __ldcg(q + 1), __ldcg(q + 2), __ldcg(q + 3)};
  else return X16{__ldg(q), __ldg(q + 1), __ldg(q + 2), __ldg(q + 3)};
}

// One 16-column chunk (8 bytes of codes, one E8M0 scale) of a weight row against x.
__device__ __forceinline__ float chunk_acc(uint2 w, uint32_t s, const X16& x, float acc) {
  float p = dot8(w.x, x.a, x.b, 0.f);
  p = dot8(w.y, x.c, x.d, p);
  return __fmaf_rn(p * 16384.0f, e8m0(s), acc);
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The producers are running blocks that never wait, so this ends within microseconds; the bound
// only turns a logic error into a launch failure instead of a hung GPU.
__device__ __forceinline__ void wait_at_least(const unsigned* ctr, unsigned target) {
  for (long long spins = 0; static_cast<int>(ld_acquire(ctr) - target) < 0; ++spins) {
    if (spins > (1ll << 25)) __trap();
    __nanosleep(100);
  }
}

// This call's next task number (tickets past the last task end a block's loop).
__device__ __forceinline__ unsigned take_ticket(const Params& P) { return atomicAdd(P.ticket, 1u) - P.ticket_base; }
// All gate/up (A) or down (B) tiles of distinct expert g are done.
__device__ __forceinline__ void wait_expert_a(const Params& P, int g) {
  wait_at_least(P.doneA + g, P.doneA_base[g] + static_cast<unsigned>(P.a_tiles));
}
__device__ __forceinline__ void wait_expert_b(const Params& P, int g) {
  wait_at_least(P.doneB + g, P.doneB_base[g] + static_cast<unsigned>(P.b_tiles));
}
// The down tiles of every expert row t uses are done (its combine may run).
__device__ __forceinline__ void wait_row_experts(const Params& P, int t) {
  for (int j = 0; j < P.K; ++j) wait_expert_b(P, P.slot_group[t * P.K + j]);
}

// Called by all threads after the task's global writes.
__device__ __forceinline__ void signal_done(unsigned* ctr) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(ctr, 1u);
}

// Streamed versions: each warp walks its rows' chunks as one flat sequence of steps (pass, k), the next step in
// flight while it computes the current one. Lane l sums chunks l, l + 32, ... of each row in order (the
// reduction order of every FFMA version, the lab's included).
template <int R>
struct Step {
  uint2 w[R];
  uint32_t s[R];
  X16 x;
};

template <int RO>
__device__ __forceinline__ Step<2 * RO> load_gate_up_step(const uint2* gp, const uint2* up, const uint8_t* gs,
                                                          const uint8_t* us, int nch, int nblk, const float* zr,
                                                          int first, int stride, int o_end, int lane, int p, int k) {
  Step<2 * RO> st;
  const int c = lane + 32 * k;
#pragma unroll
  for (int r = 0; r < RO; ++r) {
    const int o = first + p * stride + r;
    if (o < o_end && c < nch) {
      st.w[r] = __ldcs(gp + static_cast<int64_t>(o) * nch + c);
      st.w[RO + r] = __ldcs(up + static_cast<int64_t>(o) * nch + c);
      st.s[r] = __ldg(gs + static_cast<int64_t>(o) * nblk + c / 2);
      st.s[RO + r] = __ldg(us + static_cast<int64_t>(o) * nblk + c / 2);
    } else {
      st.w[r] = st.w[RO + r] = make_uint2(0, 0);
      st.s[r] = st.s[RO + r] = 127;
    }
  }
  if (c < nch) st.x = load_x16<false>(zr + c * 16);
  else st.x = X16{};
  return st;
}

template <int RO>
__device__ __forceinline__ void task_gate_up_streamed(const Params& P, int g, int tile) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const MxExpert e = P.experts[g];
  const int nch = P.latent / 16, nblk = P.latent / 32, nk = (nch + 31) / 32;
  const uint2* gp = static_cast<const uint2*>(e.gate_packed);
  const uint2* up = static_cast<const uint2*>(e.up_packed);
  const uint8_t* gs = static_cast<const uint8_t*>(e.gate_scale);
  const uint8_t* us = static_cast<const uint8_t*>(e.up_scale);
  const int first = tile * P.tile_a + warp * RO, stride = kWarps * RO;
  const int o_end = min(P.inter, (tile + 1) * P.tile_a);
  const int npass = first < o_end ? (o_end - first + stride - 1) / stride : 0;
  const int steps = npass * nk;
  for (int ai = P.grp_begin[g]; ai < P.grp_begin[g + 1] && steps > 0; ++ai) {
    const int a = P.assign_list[ai];
    const float* zr = P.z + static_cast<int64_t>(a / P.K) * P.latent;
    float ag[RO], au[RO];
#pragma unroll
    for (int r = 0; r < RO; ++r) ag[r] = au[r] = 0.f;
    Step<2 * RO> cur = load_gate_up_step<RO>(gp, up, gs, us, nch, nblk, zr, first, stride, o_end, lane, 0, 0);
    int p = 0, k = 0;
#pragma unroll 1
    for (int s = 0; s < steps; ++s) {
      int pn = p, kn = k + 1;
      if (kn == nk) {
        kn = 0;
        ++pn;
      }
      if (s + 1 == steps) pn = p, kn = k;  // nothing left: re-read the current step (cache hit)
      const Step<2 * RO> nxt = load_gate_up_step<RO>(gp, up, gs, us, nch, nblk, zr, first, stride, o_end, lane, pn, kn);
      if (lane + 32 * k < nch) {
#pragma unroll
        for (int r = 0; r < RO; ++r) {
          ag[r] = chunk_acc(cur.w[r], cur.s[r], cur.x, ag[r]);
          au[r] = chunk_acc(cur.w[RO + r], cur.s[RO + r], cur.x, au[r]);
        }
      }
      if (k == nk - 1) {
#pragma unroll
        for (int r = 0; r < RO; ++r) {
          const int o = first + p * stride + r;
          const float gsum = warp_sum(ag[r]);
          const float usum = warp_sum(au[r]);
          if (lane == 0 && o < o_end) P.h[static_cast<int64_t>(a) * P.inter + o] = situ_act(gsum, usum);
          ag[r] = au[r] = 0.f;
        }
      }
      cur = nxt;
      p = pn;
      k = kn;
    }
  }
}

template <int RB>
__device__ __forceinline__ Step<RB> load_down_step(const uint2* dp, const uint8_t* ds, int nch, int nblk,
                                                   const float* hr, int first, int stride, int o_end, int lane, int p,
                                                   int k) {
  Step<RB> st;
  const int c = lane + 32 * k;
#pragma unroll
  for (int r = 0; r < RB; ++r) {
    const int o = first + p * stride + r;
    if (o < o_end && c < nch) {
      st.w[r] = __ldcs(dp + static_cast<int64_t>(o) * nch + c);
      st.s[r] = __ldg(ds + static_cast<int64_t>(o) * nblk + c / 2);
    } else {
      st.w[r] = make_uint2(0, 0);
      st.s[r] = 127;
    }
  }
  if (c < nch) st.x = load_x16<true>(hr + c * 16);  // h was written by this launch: skip L1
  else st.x = X16{};
  return st;
}

template <int RB>
__device__ __forceinline__ void task_down_streamed(const Params& P, int g, int tile) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const MxExpert e = P.experts[g];
  const int nch = P.inter / 16, nblk = P.inter / 32, nk = (nch + 31) / 32;
  const uint2* dp = static_cast<const uint2*>(e.down_packed);
  const uint8_t* ds = static_cast<const uint8_t*>(e.down_scale);
  const int first = tile * P.tile_b + warp * RB, stride = kWarps * RB;
  const int o_end = min(P.latent, (tile + 1) * P.tile_b);
  const int npass = first < o_end ? (o_end - first + stride - 1) / stride : 0;
  const int steps = npass * nk;
  for (int ai = P.grp_begin[g]; ai < P.grp_begin[g + 1] && steps > 0; ++ai) {
    const int a = P.assign_list[ai];
    const float* hr = P.h + static_cast<int64_t>(a) * P.inter;
    float acc[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r) acc[r] = 0.f;
    Step<RB> cur = load_down_step<RB>(dp, ds, nch, nblk, hr, first, stride, o_end, lane, 0, 0);
    int p = 0, k = 0;
#pragma unroll 1
    for (int s = 0; s < steps; ++s) {
      int pn = p, kn = k + 1;
      if (kn == nk) {
        kn = 0;
        ++pn;
      }
      if (s + 1 == steps) pn = p, kn = k;
      const Step<RB> nxt = load_down_step<RB>(dp, ds, nch, nblk, hr, first, stride, o_end, lane, pn, kn);
      if (lane + 32 * k < nch) {
#pragma unroll
        for (int r = 0; r < RB; ++r) acc[r] = chunk_acc(cur.w[r], cur.s[r], cur.x, acc[r]);
      }
      if (k == nk - 1) {
#pragma unroll
        for (int r = 0; r < RB; ++r) {
          const int o = first + p * stride + r;
          const float sum = warp_sum(acc[r]);
          if (lane == 0 && o < o_end) P.d[static_cast<int64_t>(a) * P.latent + o] = sum;
          acc[r] = 0.f;
        }
      }
      cur = nxt;
      p = pn;
      k = kn;
    }
  }
}

// 16 bytes of weights, bypassing L1 (read once).
__device__ __forceinline__ uint4 ld_stream16(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// A shared-memory copy of a call's routing tables (kMeta versions), for at most kMetaG experts and kMetaA assignments.
constexpr int kMetaG = 128, kMetaA = 128;
struct MetaTables {
  MxExpert experts[kMetaG];
  int grp_begin[kMetaG + 1];
  int assign_list[kMetaA];
  unsigned doneA_base[kMetaG];
};
inline bool meta_fits(int nG, int assignments) { return nG <= kMetaG && assignments <= kMetaA; }
// Copies the tables (called by every thread before any task) and returns P with its table pointers into the copy.
// The tables were written before this launch (or by the builder this launch's pdl_enter waited for).
__device__ __forceinline__ Params copy_tables(const Params& P) {
  __shared__ MetaTables m;
  static_assert(sizeof(MxExpert) % 16 == 0, "experts copied in 16-byte units");
  constexpr int kWords = sizeof(MxExpert) / 16;
  const int A = P.T * P.K;
  for (int i = threadIdx.x; i < P.nG * kWords; i += blockDim.x)
    reinterpret_cast<uint4*>(m.experts)[i] = __ldg(reinterpret_cast<const uint4*>(P.experts) + i);
  for (int i = threadIdx.x; i <= P.nG; i += blockDim.x) m.grp_begin[i] = __ldg(P.grp_begin + i);
  for (int i = threadIdx.x; i < A; i += blockDim.x) m.assign_list[i] = __ldg(P.assign_list + i);
  for (int i = threadIdx.x; i < P.nG; i += blockDim.x) m.doneA_base[i] = __ldg(P.doneA_base + i);
  __syncthreads();
  Params Q = P;
  Q.experts = m.experts;
  Q.grp_begin = m.grp_begin;
  Q.assign_list = m.assign_list;
  Q.doneA_base = m.doneA_base;
  return Q;
}

// y[t][o] = sum_j weight[t][j] * d[(t, j)][o] over slots in order, for o in [o_begin, o_end), by threads 0 .. NT - 1.
// A group of 8 slots' d values is loaded before its sums (one L2 round trip per group); the sums keep their order.
template <int NT>
__device__ __forceinline__ void combine_rows(const Params& P, int t, int o_begin, int o_end) {
  for (int o = o_begin + static_cast<int>(threadIdx.x); o < o_end; o += NT) {
    float acc = 0.f;
    for (int j0 = 0; j0 < P.K; j0 += 8) {
      float w[8], v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int a = t * P.K + j0 + i;
        const bool in = j0 + i < P.K;
        w[i] = in ? __ldg(P.slot_weight + a) : 0.f;
        v[i] = in ? __ldcg(P.d + static_cast<int64_t>(a) * P.latent + o) : 0.f;
      }
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (j0 + i < P.K) acc = __fmaf_rn(w[i], v[i], acc);
    }
    P.y[static_cast<int64_t>(t) * P.latent + o] = acc;
  }
}

// Called by threads 0 .. NT - 1. kHmax: also clears row t's P.hmax entries.
template <int NT = kThreads, bool kHmax = false>
__device__ __forceinline__ void task_combine(const Params& P, int t, int tile) {
  combine_rows<NT>(P, t, tile * kTileC, min(P.latent, (tile + 1) * kTileC));
  // Every down task that read row t's maxima is done (this task waited for them).
  if constexpr (kHmax) {
    if (tile == 0)
      for (int j = threadIdx.x; j < P.K; j += NT) P.hmax[t * P.K + j] = 0u;
  }
}

// The end of down task (g, tile) in the fused-combine versions, called by every thread after the task's writes: it
// counts the tile done for expert g and for each row that uses g; the task that completes a row's tile (the last of
// its K slots) computes y for it at once with combine_rows' arithmetic (why: docs/CUDA.md "Routed experts").
// kHmax: the last down task of expert g clears its assignments' maxima (every down task that read them is done).
template <bool kHmax>
__device__ __forceinline__ void finish_down_fused(const Params& P, int g, int tile) {
  static_assert(kMetaA <= kThreads,
                "a group's rows (at most kMetaA assignments with the tables in shared memory) fit s_rows");
  __shared__ int s_rows[kThreads];
  __shared__ int s_n;
  __shared__ int s_last_of_g;
  __threadfence();  // this task's d writes before its counts
  if (threadIdx.x == 0) s_n = 0;
  __syncthreads();
  const int a0 = P.grp_begin[g], a1 = P.grp_begin[g + 1];
  if (threadIdx.x == 0) {
    const unsigned before = atomicAdd(P.doneB + g, 1u);
    s_last_of_g = before == P.doneB_base[g] + static_cast<unsigned>(P.b_tiles) - 1u;
  }
  for (int i = a0 + static_cast<int>(threadIdx.x); i < a1; i += kThreads) {
    const int t = P.assign_list[i] / P.K;
    unsigned* c = P.rowdone + static_cast<int64_t>(t) * P.b_tiles + tile;
    if (atomicAdd(c, 1u) == static_cast<unsigned>(P.K) - 1u) {
      *c = 0u;  // all K counts of this call are in: the next call starts from 0
      s_rows[atomicAdd(&s_n, 1)] = t;
    }
  }
  __syncthreads();
  const int n = s_n;
  if (n > 0) {
    __threadfence();  // the other tasks' d writes, seen through their counts, before reading d
    const int o_begin = tile * P.tile_b, o_end = min(P.latent, o_begin + P.tile_b);
    for (int r = 0; r < n; ++r) combine_rows<kThreads>(P, s_rows[r], o_begin, o_end);
  }
  if constexpr (kHmax) {
    if (s_last_of_g)
      for (int i = a0 + static_cast<int>(threadIdx.x); i < a1; i += kThreads) P.hmax[P.assign_list[i]] = 0u;
  }
  __syncthreads();  // s_rows, s_n and s_last_of_g are read before the next task rewrites them
}

// The persistent grid's loop over tickets, shared by every version: gate/up (A) tasks, then down (B) tasks, each
// waiting only for its expert's A tiles, then the per-row combine, waiting only for the row's experts. gate_up and
// down (task, g, tile) are called by every thread. The next ticket is taken while a task runs; a block takes exactly
// one ticket past the last task (the host counts them). kHmax: the combine tasks clear P.hmax (finish_tile kMax).
// kFuse (ExpertVariant::fused_combine): no combine tasks (P.nC = 0); each down task ends in finish_down_fused.
template <bool kHmax = false, bool kFuse = false, class GateUp, class Down>
__device__ __forceinline__ void run_tickets(const Params& P, GateUp&& gate_up, Down&& down) {
  __shared__ unsigned s_task;
  const unsigned total = P.nA + P.nB + P.nC;
  if (threadIdx.x == 0) s_task = take_ticket(P);
  __syncthreads();
  unsigned task = s_task;
  while (task < total) {
    __syncthreads();  // everyone has read s_task
    unsigned after = 0u;
    if (threadIdx.x == 0) after = take_ticket(P);
    if (task < P.nA) {
      const int g = static_cast<int>(task) / P.a_tiles;
      gate_up(task, g, static_cast<int>(task) % P.a_tiles);
      signal_done(P.doneA + g);
    } else if (task < P.nA + P.nB) {
      const int b = static_cast<int>(task - P.nA);
      const int g = b / P.b_tiles;
      if (threadIdx.x == 0) wait_expert_a(P, g);
      __syncthreads();
      down(task, g, b % P.b_tiles);
      if constexpr (kFuse) finish_down_fused<kHmax>(P, g, b % P.b_tiles);
      else signal_done(P.doneB + g);
    } else {
      const int c = static_cast<int>(task - P.nA - P.nB);
      const int t = c / P.c_tiles;
      if (threadIdx.x == 0) wait_row_experts(P, t);
      __syncthreads();
      task_combine<kThreads, kHmax>(P, t, c % P.c_tiles);
    }
    if (threadIdx.x == 0) s_task = after;
    __syncthreads();
    task = s_task;
  }
}

// The streamed FFMA version (v6: any widths, multiples of 32): the row-layout default. RO / RB: gate-up / down rows
// per warp pass. The other FFMA task forms (plain, exact-shape) are the lab's (lab/expert_tasks_lab.cuh).
template <int RO, int RB, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) expert_mlp_kernel(const Params P) {
  pdl_enter();
  run_tickets(
      P, [&](unsigned, int g, int tile) { task_gate_up_streamed<RO>(P, g, tile); },
      [&](unsigned, int g, int tile) { task_down_streamed<RB>(P, g, tile); });
}

using KernelFn = void (*)(Params);

// ExpertVariant::launch of the persistent-grid versions: kernel fn (of this file's KernelFn type) over the Params at
// `params` on `grid` blocks; every block takes one ticket per task plus the one that ends its loop. Through void
// pointers, so that ExpertMlp also launches the lab's versions, whose Params is this struct.
inline int launch_expert_kernel(const void* fn, unsigned grid, unsigned, int threads, size_t smem, void* stream,
                                const void* params, unsigned* tickets) {
  Params P;
  std::memcpy(&P, params, sizeof P);
  *tickets = P.nA + P.nB + P.nC + grid;
  return static_cast<int>(::deltafin::cuda::launch(reinterpret_cast<KernelFn>(const_cast<void*>(fn)), grid, threads,
                                                   smem, static_cast<cudaStream_t>(stream), P));
}

}  // namespace
}  // namespace deltafin::cuda
