// The routed-expert MLP of one MoE layer in one launch (MXFP4 weights, fp32 everything else).
//
// Work is split into tasks taken in ticket order by a persistent grid:
//   A: (distinct expert, tile of intermediate rows): h[a][o] = SiTU(gate[o].z[t], up[o].z[t]) for
//      every assignment a = (row t, slot j) routed to that expert;
//   B: (distinct expert, tile of latent rows): d[a][o] = down[o].h[a], once all of the expert's A
//      tiles are done;
//   C: (row t, tile of latent columns): y[t][o] = sum_j weight[t][j] * d[(t, j)][o] in slot order,
//      once the B tiles of all of the row's experts are done.
// A task only waits for tasks with lower tickets, which running blocks already hold and finish
// without waiting on anything later, so the grid cannot deadlock whatever its size. Each distinct
// expert's weight bytes are read once per launch, and no stage boundary idles the whole GPU.
//
// Exactness and batch invariance: weights decode exactly (E2M1 values are exact in fp16 and fp32);
// lane l of a warp always owns the same 16-column chunks of a weight row and sums them in order,
// lanes meet in a fixed butterfly, and each assignment's sums are independent of which or how many
// other assignments share the expert. So row t's result is bit-identical alone or in any batch.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "cuda/cuda_common.cuh"
#include "cuda/expert_routing.cuh"

namespace deltafin::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileC = 1024;  // latent columns per C task
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
  unsigned ticket_base;      // ticket value when this call starts
  const unsigned* doneA_base;  // [nG] doneA / doneB values when this call starts
  const unsigned* doneB_base;
  int nG, T, K, latent, inter;
  int tile_a, tile_b;  // intermediate rows per A task, latent rows per B task
  int a_tiles, b_tiles, c_tiles;
  unsigned nA, nB, nC;
  int chunks;  // warp-specialised versions: chunks per phase (one per block)
  // hmax versions (v121, v122, v126, v134, v138, v143, v183, v184, v192, v193, v212): per assignment, the bits of max |h| (0
  // between calls: the combine tasks of each row, or in fused versions each expert's last down task,
  // clear its entries after every down task that read them); null for the others.
  unsigned* hmax;
  // Fused-combine versions (v138, v143, v183, v184, v192, v193, v212): per row t and down tile, how many of the row's slots have
  // that tile done; the task that brings a count to K combines the tile and sets it back to 0 (so
  // every count is 0 between calls). Null for the others.
  unsigned* rowdone;
};

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

__device__ __forceinline__ float e8m0(uint32_t s) { return s ? __uint_as_float(s << 23) : __uint_as_float(0x00400000u); }

__device__ __forceinline__ float2 h2f(uint32_t v) {
  __half2 h;
  memcpy(&h, &v, 4);
  return __half22float2(h);
}

// 8 codes (one 32-bit word, code i = nibble i) -> four half2 of E2M1 x 2^-14: (c0,c2) (c4,c6)
// (c1,c3) (c5,c7). An E2M1 code s|e1 e0 m becomes the fp16 whose high byte is s000 e1 e0 m 0: that
// fp16 is exactly the E2M1 value times 2^-14 (codes with e = 0 land on fp16 subnormals, which is
// what makes 0 and 0.5 come out right). Pairs go to half2 words with one byte permute each; users
// restore 2^14. Every exact version (FFMA and tensor-core) decodes through this.
__device__ __forceinline__ void e2m1_half2(uint32_t w, uint32_t (&h)[4]) {
  const uint32_t ev = ((w << 1) & 0x0E0E0E0Eu) | ((w << 4) & 0x80808080u);  // even columns (low nibbles)
  const uint32_t od = ((w >> 3) & 0x0E0E0E0Eu) | (w & 0x80808080u);         // odd columns (high nibbles)
  h[0] = __byte_perm(ev, 0u, 0x1404);
  h[1] = __byte_perm(ev, 0u, 0x3424);
  h[2] = __byte_perm(od, 0u, 0x1404);
  h[3] = __byte_perm(od, 0u, 0x3424);
}

// e2m1_half2's words, bit for bit, with less integer-pipe work. Why: at K3's shapes the fragment-
// order kernels issue about 60 integer-pipe instructions per 512 bytes of weights, and that pipe
// (half the FMA pipe's rate) was the busiest one, 62-70% of cycles, with DRAM at 53% (ncu on the
// H200, docs/PERFORMANCE.md, session 13). Here the shifts are multiplies (the FMA pipe) and each
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

// Multipliers of e2m1_half2_mad, in constant memory so that ptxas cannot see them as shifts: it turns
// multiplies by visible powers of two into LEA / shifts on the integer pipe, which is the one this
// decode relieves (v127, docs/PERFORMANCE.md, session 13).
__constant__ uint32_t kMadMul[3] = {2u, 512u, 32u};

// e2m1_half2's fp16 codes with the columns paired differently: (c0,c4) (c2,c6) (c1,c5) (c3,c7). Why:
// each half2 is then one multiply-add and one mask of a whole word, with no byte permute: the low
// nibbles' bytes [c0 c2 c4 c6] become 2c + 0x70 in place (bit 7 = s, bits 1-3 = e1 e0 m, as in
// e2m1_half2_fma) and, shifted up one byte, [. c0 c2 c4]; the mask 0x8E008E00 keeps bytes 1 and 3:
// (c2, c6) and (c0, c4). The high nibbles the same way: (c3, c7) and (c1, c5). Per word: 6 integer-
// pipe instructions (two nibble masks, four half2 masks) and 4 multiply-adds, against 8-9 and 2-3.
// Callers stage the activations in the matching column order (stage_split kMadOrder).
__device__ __forceinline__ void e2m1_half2_mad(uint32_t w, uint32_t (&h)[4]) {
  const uint32_t lo = w & 0x0F0F0F0Fu;  // [c0 c2 c4 c6]
  const uint32_t hi = w & 0xF0F0F0F0u;  // [16c1 16c3 16c5 16c7]
  h[0] = (lo * kMadMul[1] + 0x70707000u) & 0x8E008E00u;  // (c0, c4)
  h[1] = (lo * kMadMul[0] + 0x70707070u) & 0x8E008E00u;  // (c2, c6)
  h[2] = (hi * kMadMul[2] + 0x70707000u) & 0x8E008E00u;  // (c1, c5)
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

// e2m1_half2 as floats: the 8 column values of one word (times 2^-14) in column order, so that
// several vectors can use one decode (the fp16 -> fp32 conversions are a fifth of v9's work).
__device__ __forceinline__ void decode8(uint32_t w, float* f) {
  uint32_t h[4];
  e2m1_half2(w, h);
  const float2 c02 = h2f(h[0]), c46 = h2f(h[1]), c13 = h2f(h[2]), c57 = h2f(h[3]);
  f[0] = c02.x, f[1] = c13.x, f[2] = c02.y, f[3] = c13.y;
  f[4] = c46.x, f[5] = c57.x, f[6] = c46.y, f[7] = c57.y;
}

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

// chunk_acc over decoded columns: the same products in the same order, so the same bits.
__device__ __forceinline__ float chunk_acc_decoded(const float* f, float scale, const X16& x, float acc) {
  const float xv[16] = {x.a.x, x.a.y, x.a.z, x.a.w, x.b.x, x.b.y, x.b.z, x.b.w,
                        x.c.x, x.c.y, x.c.z, x.c.w, x.d.x, x.d.y, x.d.z, x.d.w};
  float p = 0.f;
#pragma unroll
  for (int j = 0; j < 16; ++j) p = __fmaf_rn(f[j], xv[j], p);
  return __fmaf_rn(p * 16384.0f, scale, acc);
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

// Streamed versions: each warp walks its rows' chunks as one flat sequence of steps (pass, k) and
// keeps the next step's weights, scales and x in flight while it computes the current one, so
// memory latency overlaps arithmetic across row boundaries too. Same per-lane order as above.
template <int R>
struct Step {
  uint2 w[R];
  uint32_t s[R];
  X16 x;
};

template <int RO>
__device__ __forceinline__ Step<2 * RO> load_gate_up_step(const uint2* gp, const uint2* up, const uint8_t* gs,
                                                         const uint8_t* us, int nch, int nblk, const float* zr, int first,
                                                         int stride, int o_end, int lane, int p, int k) {
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
__device__ __forceinline__ Step<RB> load_down_step(const uint2* dp, const uint8_t* ds, int nch, int nblk, const float* hr,
                                                   int first, int stride, int o_end, int lane, int p, int k) {
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

// The same for 16 bytes; kL2Prefetch: ask L2 for the whole 256-byte segment around it.
template <bool kL2Prefetch>
__device__ __forceinline__ uint4 ld_stream16(const uint4* p) {
  uint4 v;
  if constexpr (kL2Prefetch)
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  else
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
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
    auto row_ptrs = [&](int o0, const uint2* (&w)[R], const uint8_t* (&sc)[R]) {
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
    auto row_ptrs = [&](int o0, const uint2* (&w)[RB], const uint8_t* (&sc)[RB]) {
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

// A shared-memory copy of a call's routing tables (kMeta versions), for calls with at most kMetaG
// distinct experts and kMetaA assignments.
constexpr int kMetaG = 128, kMetaA = 128;
struct MetaTables {
  MxExpert experts[kMetaG];
  int grp_begin[kMetaG + 1];
  int assign_list[kMetaA];
  unsigned doneA_base[kMetaG];
};
inline bool meta_fits(int nG, int assignments) { return nG <= kMetaG && assignments <= kMetaA; }
// Copies the tables (called by every thread before any task) and returns P with its table
// pointers into the copy. The tables were written before this launch (or by the builder this
// launch's pdl_enter waited for).
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

// y[t][o] = sum_j weight[t][j] * d[(t, j)][o] over slots in order, for o in [o_begin, o_end),
// by threads 0 .. NT - 1. Every d value of a group of 8 slots is loaded before the group's sums, so
// a call waits for 16 slots in two L2 round trips instead of 16; the sums keep their order.
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

// The end of down task (g, tile) in the fused-combine versions, called by every thread after the
// task's writes: it counts the tile done for expert g and for each row that uses g, and the task
// that completes a row's tile (the last of the row's K slots to have it) computes y for that tile
// at once, with combine_rows' arithmetic, instead of a combine task queued after every down task.
// Why: at T = 1 the combine tasks ran only once the last down task ended, ~3 us in which the rest
// of the GPU was idle (a v122 trace, docs/PERFORMANCE.md, session 16). kHmax: the last down task of
// expert g clears its assignments' maxima (every down task that read them is done).
template <bool kHmax>
__device__ __forceinline__ void finish_down_fused(const Params& P, int g, int tile) {
  static_assert(kMetaA <= kThreads, "a group's rows (at most kMetaA assignments with the tables in shared memory) fit s_rows");
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

// The persistent grid's loop over tickets, shared by every version: gate/up (A) tasks first, then
// down (B) tasks, each waiting only for its own expert's A tiles, then the per-row combine, waiting
// only for the row's experts. gate_up(task, g, tile) and down(task, g, tile) are called by every
// thread of the block. The next ticket is taken while a task runs; a block takes exactly one ticket
// past the last task (the host counts them).
// kTrace: thread 0 writes each task's start, wait and end times (trace_at; the task itself writes
// when it is ready to stream). kHmax: the combine tasks clear P.hmax (finish_tile kMax).
// kFuse (v138, v143, v183, v184, v192, v193, v212): no combine tasks (P.nC = 0); each down task ends in finish_down_fused.
template <bool kTrace = false, bool kHmax = false, bool kFuse = false, class GateUp, class Down>
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
      if (threadIdx.x == 0)
        wait_row_experts(P, t);
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

// Mode 0: plain, 1: streamed (any shape), 2: exact (chunks per lane NK1 / NK2; NA activation
// vectors per pass over the weights, each summed as alone), 3: exact with each chunk decoded once
// for all NA vectors (the same bits as 2).
template <int RO, int RB, int NA, int U, int kMinBlocks, int kMode, int NK1 = 0, int NK2 = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks) expert_mlp_kernel(const Params P) {
  pdl_enter();
  extern __shared__ float4 xs[];
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

#include "cuda/mxfp4_experts_mma.cuh"
#include "cuda/mxfp4_experts_imma.cuh"
#include "cuda/mxfp4_experts_ws.cuh"
#include "cuda/mxfp4_experts_direct.cuh"

using KernelFn = void (*)(Params);

// Numbered versions (kept for the checker and the benchmark); the first is the default, chosen
// by measurement on an H200 (docs/PERFORMANCE.md). RO/RB: gate-up / down rows per warp pass;
// NA: assignments per pass over the weights; U: chunk iterations unrolled (loads in flight);
// last: blocks per SM the registers are capped for.
struct Variant {
  const char* name;
  KernelFn fn;
  int tile_a, tile_b;
  int nk1 = 0, nk2 = 0;  // exact versions: the chunks per lane they are built for (0: any shape)
  int order = 0;         // versions with the same order compute the same bits
  int mma = 0;           // tensor-core version (mxfp4_experts_mma.cuh; 2: float-scale buffers, 3: small stages): 16-byte alignment
  int imma = 0;          // integer tensor-core version (mxfp4_experts_imma.cuh): activation vectors per pass; 16-byte alignment
  int ring = 0;          // imma versions: ring stages per warp (0: register prefetch)
  int ws = 0;            // warp-specialised version (mxfp4_experts_ws.cuh): ring stages per block; imma = vectors per pass
  int rs = 0, nq = 0, nr = 0;  // warp-specialised versions: row sets per task, column splits, row sets per warp (ws::Shape)
  int nv = 1;    // exact FFMA versions: activation vectors per pass over the weights
  int shared = 0;  // > 0: replaces the default when experts are shared by at least shared/100 rows each
                   // on average (and it shares the default's order)
  int frag = 0;    // reads the packed weights in fragment order (mxfp4_experts_direct.cuh), this many 16-row
                   // tiles per warp; 16-byte alignment
  int meta = 0;    // copies the routing tables into shared memory (MetaTables): calls whose tables do not
                   // fit run the first version of the same order and layout without it
  int hmax = 0;    // gate/up tasks record max |h| per assignment for the down tasks' staging (Params::hmax)
  int lanes = 0;   // fragment-order versions: activation-fragment lanes per 32-column block (0: 24)
  int fuse = 0;    // no combine tasks: down tasks combine the rows they complete (finish_down_fused); needs meta
  int few = 0;     // > 0: replaces the default for calls of at most `few` rows (and it shares the default's
                   // order); a `shared` version that applies comes first
  int stab = 0;    // fragment-order versions: per-warp scale tables in shared memory (direct::put_scales)
  int few_share = 0;  // a `few` version: it also comes before the `shared` versions while the call's rows
                      // per expert stay below few_share/100 (0: the `shared` versions always come first)
};
// Measured on an H200 (docs/PERFORMANCE.md has the runs), % of device-to-device copy bandwidth at
// T=1 / T=8: v11 50.5-50.8 / 61.1-62.2, v9 50.5-53.3 / 50.1-60.3, v12 40-43 / 59-63, v6 36-39 / 42-45,
// v2 35 / 40. Dropped after measuring: v8 (RO=4 RB=8) 51/56, v10 (128-row tiles) 43/58, v13 (v12 with
// 32-row tiles) 50/48, v15 (v9 with 32-row tiles) 46/52, v14 (v15 for few experts, v11 for many)
// 47.5/61.5. Every FFMA version computes the same bits (the checker compares them), so the choice
// among them never changes results. The first version that fits the shapes is the default.
// Tensor-core versions (mxfp4_experts_mma.cuh, reduction order 1: their bits differ from the FFMA
// versions', and agree among themselves), 2026-12-02: v21 46.3 / 56.3, v20 45.1 / 55.8, v16 36 / 42;
// dropped: v17-v19 (v16 plus L2 prefetch of later stages through cp.async.bulk.prefetch, with or
// without float scale buffers) 26.5-27.9 / 30.1-31.7.
// Integer tensor-core versions (mxfp4_experts_imma.cuh, reduction order 2), session 3, six H200
// runs: v39 (cp.async ring) 45.6-48.5 / 62.4-64.9 (50.5 / 65.3 in the last run, after moving the
// permute table into a per-thread register), v38 (register prefetch) 46.4-49.5 / 55.9-60.1,
// v41 42-47 / 50-58; in the same runs v9 53.4-53.8 / 57.8-60.3 and v11 48.8-49.9 / 57.5-62.5.
// Dropped: v30-v37 and v40, v42-v44 (earlier cuts, 4 blocks/SM, 64-row down tiles, 5-6 ring
// stages: 36-47 / 50-59). A load-only build of the same task scheme (no decode, no mma) streamed
// 50-55 / 59-64% with register prefetch and 67.5 / 87.4% with the ring: the ring is the scheme
// that can reach the target at T=8; at T=1 the task scheme itself (tail of ~200 KB tasks, per-task
// staging) caps it. v9 stays the default: the best at T=1 (a decode step), within a few points
// of the best at T=8.
// Warp-specialised versions (mxfp4_experts_ws.cuh, reduction orders 3 and 4), session 4, six H200
// runs: v55 (16 consumer warps, one vector per pass) 44.8-45.3 / 23.6-24.0, v51 (8 consumer warps)
// 36.4-38.4 / 36.5-39.1; in the same runs v9 53.3-54.7 / 58.1-60.5 and v39 45.4-49.5 / 56.1-59.7.
// Streaming is even across the SMs there (no tail), but with one block per SM the consumers issue
// too slowly: ncu on v55 at T=1 shows 200 warp instructions per KB of weights (133 of them in the
// inner loop, 56 of those the E2M1 decode) at 50% issue utilisation. Dropped: v50 (4 vectors, 2
// stages) 34.7-38.7 / 31.9-36.6, v52-v54, v56-v58 (8/16-row tiles, 16 warps in other cuts) 25-38 / 17-39.
// Session 5 (one H200 run, % of D2D at T = 1 / 2 / 4 / 8 over all 896 experts, then T = 2 / 4 / 8
// drawing from 64, where 8 rows share ~57 experts): v9 54.2 / 58.7 / 60.4 / 60.1, 51.1 / 43.2 / 29.3;
// v11 53.9 / 62.7 / 65.7 / 64.4, 49.9 / 44.3 / 30.9; v62 (two rows per pass over an expert's
// weights) 48.2 / 55.9 / 59.3 / 60.2, 52.5 / 49.1 / 36.5; v60, v61, v63 below v62 with shared
// experts (33.7-35.1 at T=8) and below v11 without; v39 51.6 / 61.3 / 64.6 / 63.6, 46.2 / 44.3 / 29.2;
// v41 47.4 .. 57.2, 34.3 at the shared T=8. All FFMA versions share v9's bits, so the default picks
// among them per call (ExpertMlp::Impl::pick): v9 for one row, v11 from two, v62 where rows share
// experts. With shared experts every version is bound by arithmetic (each row's products are its
// own), not by bytes.
// Session 6 (six H200 runs, same % columns): v68 (v62's cut with each chunk decoded once for up to
// four rows: the fp16 -> fp32 conversions were repeated per row) 36.4-36.6 at the shared T=8 against
// v62's 33.6-34.8, but 41.6-42.0 at T=1 and below v62 at 1.5 rows per expert: the default takes it
// from 2 rows per expert. Dropped as well: v80, v82-v84 (the same bits with every row vector's
// activations read once per chunk into registers and 4-8 weight rows decoded one after another,
// to spread those shared-memory reads over more rows) 24.0-42.4 at T=1, 21.0-31.6 at the shared
// T=8: the registers they need (spills at 2 blocks per SM, one block otherwise) cost more. v22 (v20's arithmetic, 128-column stages, compact fragments, two blocks per SM): 38.0-38.8
// / 52.4-54.4, 34.1-35.4 shared; v20 stays the best of that order (47.0-47.6 / 56.9-57.7, 42.7-43.6
// shared). Dropped: v64, v66, v67 (one decode for 2-8 rows, other cuts) 24.8-41.1 at T=1; v70-v73
// (v9, v11, v64, v12 with each warp's next rows asked of L2 by cp.async.bulk.prefetch) 37.6-52.3 at
// T=1, all below their plain versions; v74-v79 (v20's arithmetic with the code words loaded by each
// lane straight into registers, 1-3 groups of 4 blocks ahead, 1-2 blocks per SM, 1-2 pairs of rows
// per pass) 34.6-42.8 at T=1, 32.6-44.6 at the shared T=8: ncu on v74 shows 44% of the stall
// cycles waiting on those 4-byte loads (two per 32-byte sector, one sector per row and lane quad).
// v11 no longer replaces v9 from two rows: in all six session-6 runs v9 was as fast or faster over
// 896 experts (T = 2 / 4 / 8: v9 58.3-59.0 / 59.5-60.5 / 58.0-60.0, v11 49.8-61.8 / 49.3-54.4 /
// 57.5-59.4); session 5's one run had v11 ahead (62.7 / 65.7 / 64.4).
// Session 9 (three H200 runs; same % columns): the fragment-order versions (mxfp4_experts_direct.cuh:
// v20's arithmetic and bits, the packed codes permuted so each lane's mma words are one 16-byte load
// straight into registers, no shared-memory stages). v96 (one 16-row tile per warp, 3 chunks ahead,
// 2 blocks/SM, activation fragments kept across tasks that share them) 56.3 / 63.8 / 68.3 / 70.3,
// shared 61.8 / 60.5 / 47.1, against v9's 54.0 / 58.8 / 60.3 / 59.9, 51.0 / 43.2 / 29.1 in the same
// run: the fastest version at every T, so where the engine can store fragments (preferred_layout)
// it is the default. v91 (two tiles per warp) 47.0-48.1 / 58.9-64.6 / 67.3-69.0 / 70.4-72.3; v95 (one
// tile, 3 blocks/SM) 50.3 / 61.9-63.4 / 66.7-69.5 / 69.1-72.8 (removed in session 16 for v136's
// place: the table held 32 versions then). Dropped: v90 (v91 two chunks ahead)
// 44.9-46.8 at T=1; v92, v93 (two tiles, 3 blocks/SM: spills) 38.7-38.9; v94, v97 (one tile, two
// chunks ahead, 3 or 4 blocks/SM) 45.5-49.6. Before the fragments were kept across tasks, v96 took
// 54.4% at T=1 (the per-task staging of the same activation row, with no weight loads in flight).
// Session 10 (H200, same % columns): v108 (v96's cut, two chunks ahead, with up to four vectors per
// pass: each block of codes decoded once for two pairs of assignments; one-pair passes run v96's
// code) 55.1-56.0 / 63.4-64.2 / 67.2-68.1 / 68.3-70.6, shared 57.9-61.5 / 61.3-62.4 / 54.2-56.4,
// against v96's 54.2-54.9 / 63.2-63.8 / 57.7-67.7 / 68.0-70.0, 60.6-61.3 / 58.9-60.1 / 46.7-47.5 in
// the same three runs: the `shared` version from 1.2 rows per expert (same bits as v96). Its cut with three chunks
// ahead (spills) took 60.1-61.3 at T=8 of 896. Dropped, all slower than v96 in the same runs (T=1,
// T=8): v100, v101 (v96 asking L2 for its tile 4 or 8 groups ahead by cp.async.bulk.prefetch) 47.2-50.9,
// 63.0-64.8; v102, v103 (each warp's tile through a 4-stage bulk-copy ring in shared memory, no
// register loads; with or without L2 prefetch of the scales) 48.5-49.7, 63.6-65.7; v104 (v96 in
// blocks of 4 warps, 4 blocks/SM: half the bytes per task for a shorter tail) 55.0-55.1, 69.1-69.8;
// v105, v106 (v96 / v104 holding the next ticket and asking L2 for that task's first weights during
// the last groups of the current one) 44.0-45.0, 65.0-66.2. ncu on v96 at T=1: SM active 87% of
// the elapsed cycles, 0.55 instructions issued per scheduler and cycle, stalls led by long
// scoreboard (1.44 of 6.79 cycles), not-selected (1.20) and math-pipe throttle (1.16).
// Session 11 (H200, same % columns): v108 took 56.1-56.5 at T=1 against v96's 54.2-55.7 in all seven
// runs and matched it elsewhere over 896 experts, but a build running v108 for every call gave the
// slice-2l layers and verify passes no gain (MLA + MoE T=1 0.435-0.439 ms against 0.432-0.435), so
// the threshold stays. Dropped: v109 (v96 two chunks ahead: v108's one-pair loop without the second
// buffer) 55.5-55.7 at T=1; v110-v113 (v96 / v108 with the K of the down tasks, or of all tasks, in
// two halves summed by two groups of four warps and added in a fixed order, so other bits: tasks
// half as long for a shorter T=1 tail) 53.1-55.5 at T=1 and 62.5-67.1 at T=8 (v96 70.8-71.0);
// v114, v115 (v96 keeping its weight ring and scales across tasks: the next pass's or next task's
// first chunks loaded during the last group, chosen by branches inside the loop) 46.9-47.9 at T=1,
// 57.7-61.2 at T=8. v116 does the same with v96's loop body for all groups but the last, which is
// peeled (the loop stays straight-line code), and skips next tasks without rows: 55.1-55.8 / 64.9 /
// 69.4-69.6 / 70.6-71.3 against v96's 55.3 / 63.7 / 67.7-68.0 / 69.7-70.0 in the same two runs
// (kernel alone at T=1 57.9 against 57.4-57.5), same bits (checked). Not the default: a build with
// v116 as the default gave the slice-2l layers nothing at T=1 (MLA + MoE 0.436-0.438 ms against
// 0.432-0.433, verify passes within 1.7%), where v96 is level with it; kept for measurements and as
// the cross-task pipeline to build on; removed in session 13 (v125 showed that a block holding its
// next ticket costs more than it saves; the code is in git history, e.g. 06506f1). v117 (v116 two
// chunks ahead) 53.7-54.2 / 63.9-64.1 / 68.2-68.4 / 70.0-70.2.
// Session 12 (H200, same % columns; docs/PERFORMANCE.md): a plain kernel reading the same bytes
// streams 95-96% of D2D at T=1, so the task scheme costs the rest; v118 (v96 traced) put a block's
// time at T=1 as 71% streaming, 14% after its last task, 10% staging and task starts, 2% waits. v119
// (v96 with the routing tables in shared memory) 55.6-56.5 / 63.2-63.6 / 68.2-68.5 / 68.6-70.0, v121
// (v119 with max |h| recorded by the gate/up tasks: one staging pass per down task) 55.9-56.4 / 64.3
// / 68.6-69.0 / 70.2-70.6, shared 61.3-61.4 / 60.2-60.3 / 43.4-44.4, against v96's 54.3-55.1 /
// 62.9-63.9 / 66.8-68.2 / 68.5-69.7, 59.8-60.5 / 57.6-59.7 / 43.2-44.6 in the same five runs; same
// bits (checked). v121 was the fragment-layout default in session 12 (v96 where the tables exceed
// MetaTables).
// Dropped: v123 (v121 whose first gate/up task to stage a row of z publishes its max |z|, so later
// ones stage in one pass) 55.9-56.1 / 63.9-64.0 / 68.8 / 69.8-70.0 against v121's 55.8-56.0 /
// 64.0-64.2 / 68.4-69.2 / 69.6-69.9 in the same two runs; v125 (v121 knowing its next task and
// asking that task's vectors into shared memory by cp.async during its own first pass) 51.0-51.2 /
// 61.9-62.3 / 66.1-66.3 / 68.3-68.7 against v121's 56.4-56.9 / 64.1-64.2 / 69.4-69.6 / 70.9-71.1
// (blocks holding their next ticket made down tasks wait longer).
// Session 13 (H200): ncu on v121 at T=1 showed the integer pipe as the busiest (62% of elapsed
// cycles, FMA pipe 13%, DRAM 53%). v126 (v121 with e2m1_half2_fma and scale_at_fma in groups
// without an E8M0 0) 56.6-58.2 / 65.1-66.2 / 69.6-70.7 / 70.1-73.0 per call (kernel alone at T=1
// 59.9-60.6) against v121's 56.0-56.7 / 64.2-65.1 / 68.3-69.8 / 69.7-72.2 (58.0-58.9) in the same
// three runs; v130 (v96 the same way) 56.4-56.8 at T=1 against v96's 55.2. Same bits (checked). v126
// is the fragment-layout default, v130 runs where the tables exceed MetaTables. Dropped: v127 (bytes
// 1 and 2 of each word swapped so that every half2 is one multiply-add and one mask: ptxas made LEAs
// of the multiplies, 97 instructions per chunk against v126's 80) 53.7-54.0 / 61.5 / 65.3-65.5 /
// 66.4-67.0; v128 (codes as FP8 E4M3 bytes, two per cvt to half2) 53.1-53.9 / 61.4-61.6 / 65.6-65.9 /
// 68.1, and not v20's bits; v129 (v108 the v126 way) 54.4-54.7 against v108's 55.2-55.3 at T=1,
// 52.6-52.9 against 53.5-53.8 at the shared T=8. v131 (v126 with 32 fragment lanes, zeros in
// columns 6 and 7, so every lane reads its fragments without a predicate or zeroing; same bits,
// kept for measurements): per call 0.6-1.9 points ahead of v126 from T=2 and 0.4-1.6 behind at
// T=1; the kernel alone at T=8 1.2-1.9 ahead on one H200 (three runs) and 1.6-2.8 behind on another
// (four runs): not used by the default.
// Session 16 (H200): v134 (v126 decoding through e2m1_half2_mad: v127's idea with the column pairs
// changed instead of the bytes swapped, and the multipliers in constant memory so that they stay
// multiplies) 59.7-59.8 / 68.7-69.0 / 73.9-74.0 / 75.5-76.1 per call, kernel alone 64.6-64.8 at T=1
// and 76.4-77.0 at T=8, against v126's 58.3-58.5 / 65.5-66.0 / 70.5-70.6 / 72.3-72.7 (62.5, 73.4-73.5)
// in the same two runs; SASS PRMT 288 -> 32, integer-pipe instructions ~1,060 -> ~900 over the
// kernel. Same bits (the tensor core's k-slot order within one mma does not change its sum: checked
// against v20). v134 is the fragment-layout default, v135 (v130 the same way) runs where the tables
// exceed MetaTables. Dropped: v132 (v126 whose warps load the first chunks of their block's next task
// during their last ones, the next ticket shared from the task's start), kernel alone 61.2-61.7 at
// T=1 and 62.0-64.7 at T=8 against v126's 61.4-61.5 and 71.1-71.4; with runs of 2, 4 or 8 tiles of
// one expert per ticket (fewer restagings at T=8) 53.2 / 40.3 / 21.7 at T=1 and 71.9 / 72.7 / 66.3
// at T=8 against v126's 61.9 and 74.0.
// v136 (v108 decoding through e2m1_half2_mad), per call drawing from 64 experts at T = 2 / 4 / 8
// (1.14 / 1.45 / 2.2 rows per expert): 63.0-63.4 / 63.7-64.6 / 49.1-49.4 against v108's 58.4-58.7 /
// 57.1-59.4 / 53.2-53.4 in the same two runs (128 registers). Same bits. So v136 takes rows that
// share experts from 1.2 rows per expert and v108 from 1.8.
// Session 17 (H200, % of D2D over 896 experts, kernel alone, two runs each against v134 in the same
// runs): v138 (v134 whose down tasks combine the row tiles they complete: no combine tasks) 63.8-65.3
// at T=1, 71.2-72.4 at T=2, 72.2-74.9 at T=4, 72.8-76.6 at T=8 against v134's 61.9-63.4 / 70.1-71.5 /
// 73.3-75.7 / 73.7-77.4: the default for calls of one or two rows (`few`). Same bits. v118 and v119
// were removed for v138 and its traced v143. Dropped (each exact, 234 of 234 checks; diffs kept
// out of the tree): v137 (v134 whose warps, in their block's last task, ask L2 for the rest of their
// tile in one bulk prefetch) 58.3-58.4 at T=1 and 62.1-63.5 at T=8 against 62.2-62.4 and 74.0-74.3;
// v139 (v137 + v138) 57.7-58.5 / 68.8-69.0; v141 / v142 (v138 / v134 with every weight load through
// an 8-chunk cp.async ring per warp in shared memory: 7 chunks in flight instead of 3, 113 / 121
// registers) 62.7-63.1 / 57.9-58.6 at T=1 and 70.2-70.3 / 69.5-69.8 at T=8 against v134's 62.3-62.9
// and 73.6-74.4; v148 / v149 (v134 with only the last wave, the last gridDim.x tickets, through an
// 8- / 12-chunk ring) 61.1 / 59.8-59.9 at T=1 and 76.7 / 73.4-74.4 at T=8 against 62.7-62.8 and
// 77.0-77.1; v144 (down tasks wait for their expert after their first loads, only when they stage)
// 61.8 / 69.2 against 61.9-62.7 / 73.7; v145 (v144 + v138) 63.0-63.4 / 69.1-69.7; v146 (warps run
// on between block barriers: gate/up pairs meet at named barriers, per-warp done counts, the next
// ticket published two groups into a task) 59.9-60.3 / 72.3-72.7 against 62.0 / 74.0-75.0; v150
// (one combine task per row and down tile, waiting on a per-tile count the down tasks add to without
// a returned value) 62.5 / 76.9-77.1 against 63.1-63.4 / 77.2-77.4; v152 / v153 (v134 with every
// load through an 8- / 12-chunk ring read one chunk ahead into registers) 59.5-59.7 / 56.9-57.2 and
// 67.1-67.7 / 69.9-70.1 against 62.7-62.8 and 77.7.
// Session 18 (H200, kernel alone, % of D2D at T=1 / T=8, two runs each against v138 in the same
// runs; every one exact, bit-identical to v20): v154 (v138 whose blocks, once out of tasks, ask L2
// for what the last tasks still have to read: progress words per task and warp, prefetch.global.L2)
// 63.7-64.8 / 75.8-76.1 against 65.3-65.5 / 76.4-77.0: the last tasks were not faster with their
// bytes in L2 (traced v155: 11.0-11.2 us from staged to done against 12.0); v156 / v157 (v138 asking
// L2 for its own tile 3 / 5 groups ahead, one prefetch.global.L2 per group from 16 lanes) 60.6-60.9
// / 58.5-58.8 and 72.5-73.0 / 72.2; v158 (both) 60.2-60.4 / 71.9-72.2. v159 (the last expert's down
// tiles as one-tile tasks, each tile's K cut over the block's 8 warps; warp 0 adds the other warps'
// block sums from shared memory in block order, so v20's bits): in the same kernel 62.3-62.5 /
// 72.0-72.2 (56.5-56.6 / 66.9-67.0 with per-warp staging, 51.2-51.5 with the part not inlined)
// against 65.1 / 75.6-76.2, because the split path slowed the main loop (gate/up tasks 18.8 -> 19.8
// -21.3 us in the traces); as a second kernel started with PDL as the blocks run out of tasks
// (expert_split_kernel) 65.0-65.2 / 75.6-75.7 against 64.8-65.2 / 76.4-76.5 (63.0 at T=1 without
// PDL): a one-tile part took ~9 us (2 staging, 6 chunks per warp, the chain), about what the last
// wave had cost. Git history has the one-kernel v159 with per-warp staging (06a0828) and the
// two-kernel one (6d43431); v154-v158 were not committed.
// Session 19 (H200, kernel alone, % of D2D at T=1 / T=8, two runs each against v138 in the same
// runs; every one exact, bit-identical to v20; code in git history: b18d901, 81c5b0b, 2285b14,
// a82499e, b3ced87): v161-v164 (v138 with 4-7 chunks ahead through an 8-slot register ring, no
// spills) 61.5-62.9 / 63.6-68.8 against 65.1 / 71.6-71.8, while the read-only kernel reads a T=1
// call at 95% of D2D; v165 (the next down task's expert count read before the closing fence, and h
// staged in one round trip) 62.3-62.9 / 71.3-72.3 against 64.0-64.6 / 72.8-73.2 (traced: down waits
// 0.80 -> 0.43 us, staging 2.18 -> 1.94, gate/up streaming 17.44 -> 17.63: the same span); v169 /
// v170 (the last one / two experts' down tiles cut into 16-row parts with K over 8 warps, block
// sums handed to warp 0 in shared memory: as a second kernel its blocks started only once both of
// an SM's expert-kernel blocks had ended; as extra blocks of this kernel, parts of ~6 us started ~2
// us after blocks ended) 63.9-64.5 / 60.0-60.6 at T=1 against 64.2-64.9; v176 (v169's parts as
// tickets of the same blocks, a __noinline__ call) 58.2-58.3 / 69.0 against 65.1-65.2 / 76.4-76.5;
// v172 (the first 14-56 down tickets run two tiles) 61.1-64.5 / 61-65 against 64.7-65.1 / 73.7-74.1
// (the last wave kept its 27 tasks); v174 (the pass over a tile as a __noinline__ function)
// 62.7-63.1 / 71.1-71.2 against 64.8-64.9 / 73.1-73.3. Capping the grid below 2 blocks per SM lost
// steadily (248: 63.6-63.9, 224: 60.1-60.5).
// Kept: v183 (v138 with 32 fragment lanes, zeros stored for columns 6 and 7 as in v131, so no lane
// loads its fragments under a predicate into cleared registers, and every group's scales through
// scale_at, so no zero-scale vote per group: ~7 fewer instructions per 512 bytes of codes, counted
// in v138's SASS) 66.9-67.5 / 71.8-74.2 / 72.4-75.7 / 67.4-75.3 at T = 1 / 2 / 4 / 8 against v138's
// 63.3-64.1 / 69.1-72.1 / 68.0-74.6 / 68.1-72.6 in five runs on two H200s: the default for calls of
// one or two rows (`few`) in v138's place (v138 stays the one for GPUs where v183's larger fragment
// buffer would cost a block per SM). Same bits. Measured beside it (b3ced87): v180 (v138 whose lanes
// 24-31 read the fragments that follow instead of zeros, no vote) 64.8-67.4 at T=1 on two H200s,
// v182 (v180 with two groups per loop step) 64.9-66.2, v178 (lanes only) 65.2-66.2, v179 (v134 with
// them) 63.7-64.0 against v134's 62.5-63.0; at T=8 from 8 points behind v138 to 3 ahead, run to run.
// Session 20 (seven H200s, % of D2D with the kernel alone at T = 1 / 2 / 4 / 8, docs/PERFORMANCE.md):
// kept v192 (v183 with per-warp scale tables: each lane converts one word of the group's 128 E8M0
// scales and each chunk reads its four as a float4, instead of every lane converting 16 per group;
// the tile's last group apart so the others load without a bound check; running pointers: ~64.5
// instead of ~77 instructions per 512 bytes) 72.4-74.6 / 79.4-82.1 / 81.2-85.3 / 80.8-86.7 against
// v183's 65.8-69.1 / 73.3-74.6 / 74.6-78.2 / 70.9-79.0 and v134's 62.1-62.9 / 69.9-71.4 /
// 73.2-75.8 / 74.0-76.9: the default for calls of up to 8 rows below 2 rows per expert
// (few_share), and v194 (v136 with the tables; 24 lanes, lanes 24-31 reading the fragments that
// follow) the `shared` version from 1.2 rows per expert: 69.2-70.1 / 65.5-67.3 / 55.9-58.1 at
// T = 2 / 4 / 8 drawing from 64 experts against v136's 65.2-65.3 / 61.6-62.5 / 54.6-55.0, and 3-4%
// faster in slice-2l's T=4 and T=8 layers. Measured and dropped (git history): v185, v189, v190,
// v191 (the steps to v192), v187 / v188 (v134 with the tables / with 32 lanes and no vote) 66.7-67.3
// / 61.8-61.9 at T=1, v195 (v194 three chunks ahead, spills), v196 / v197 (the down fragments
// staged once per expert into global memory by the block completing its gate/up tiles) 60.0-60.2
// against 72.9-73.0, v198-v200 (each group asking L2 for the group 1-3 ahead) 66.8-67.8 against
// 73.0-73.1, v201 (4 chunks in flight, each slot reloaded once decoded) 67.4-68.5 against 72.8-73.1,
// v202 / v203 (5 / 6 chunks ahead, an 8-slot ring) 61.0-61.2 / 67.8-68.0 against 74.5-74.6.
// Session 21 (H200s, docs/PERFORMANCE.md): kept v212 (v192 with two groups per step of its loop: each
// group's scale-table halves fixed in its code, the loop control once per two groups; 247.5 instead of 258
// instructions per group), the default for calls of up to 8 rows below 2 rows per expert in v192's place:
// with the kernel alone, measured shape-major (every version after the same kind of work), 74.2-75.9 at
// T=1 against v192's 72.8-74.4, 81.9-84.2 at T=2 and 83.5-88.1 at T=4 against 79.6-82.1 and 81.3-85.4,
// 76.9-89.7 at T=8 against 79.8-82.4; one version per process on one H200, +1.3-1.8 at every T. Same
// bits. Measured and dropped (git history; version-major runs, which put a version listed after another
// ~1.3 points low at T=1): v204 / v205 (the weights through a
// per-warp ring of 3 / 2 group slots filled by bulk copies, 9c79a56) 62.4-63.4 / 66.5-67.6 at T=1 against
// v192's 73.0-74.2, v206 (the first 3/4 of the down tiles two per ticket) 66.7-67.0 against 73.0-73.1,
// v208 (the L2::256B hint) 71.8-72.1 and v209 (2 chunks ahead) 71.5-71.6 against 74.4, v210 / v211 (3
// blocks per SM, 80 registers) 66.2-67.2 against 74.4-74.5, v213 (the down staging's h loads before its
// maxima, 277a920: traced, down tasks 1.1 us shorter, gate/up tasks 0.2-0.3 us longer) 72.3-74.0 against
// 72.7-74.5, v215 / v216 (v192 / v213 with that staging as a call) 72.0-73.1 / 73.3-73.6 against 74.2-74.5,
// v218-v220 (v212 with v213's staging, 2 chunks ahead, 22e24f5) 72.0-73.9 against v212's 74.2-74.3, v224 /
// v225 (three / four groups per loop step, spilling; e744347) 60.8 / 53.8-53.9 against 74.4-74.5.
// Session 22 (H200s, one version per process, docs/PERFORMANCE.md): kept expert_grid (calls of a few
// waves of tasks take fewer blocks: K3 at T=1 on 238 instead of 264, 75.9-77.9 against 74.1-75.9; the
// kernels unchanged). Measured and dropped (git history b4ca112, e272a6d), T=1 against v212's
// 74.2-76.1 in the same runs: v226 (v212's loop as one __noinline__ function) 70.6, v227 / v228 (v226 /
// v212 with both stagings in one round trip) 61.0-61.3 / 65.2-65.5, v229-v233 (the down, the gate/up or
// both stagings in one round trip or through a cp.async buffer in shared memory) 59.1-64.7, v234-v236
// (the staging record in shared memory, alone or with v231 / v229) 67.0-67.3 / 63.1 / 73.6, v237 / v238
// (each group's loads written at its top through 8 chunk slots; + v229) 69.9-70.0 / 61.2-61.4. The SASS
// says why: the same loop (496-500 instructions, no spill in it) with its weight loads placed later by
// ptxas wherever the code around it leaves the allocator less room, so fewer chunks are in flight.
const Variant kVariants[] = {
    {"v9 k3-exact RO=2 RB=4 tiles 64/64", expert_mlp_kernel<2, 4, 1, 1, 2, 2, 7, 6>, 64, 64, 7, 6},
    {"v11 k3-exact RO=2 RB=4 tiles 64/64 3 blocks/SM", expert_mlp_kernel<2, 4, 1, 1, 3, 2, 7, 6>, 64, 64, 7, 6},
    {"v60 k3-exact RO=2 RB=4 tiles 64/64 2 vectors per pass", expert_mlp_kernel<2, 4, 2, 1, 2, 2, 7, 6>, 64, 64, 7, 6,
     0, 0, 0, 0, 0, 0, 0, 0, 2},
    {"v61 k3-exact RO=1 RB=2 tiles 64/64 4 vectors per pass", expert_mlp_kernel<1, 2, 4, 1, 2, 2, 7, 6>, 64, 64, 7, 6,
     0, 0, 0, 0, 0, 0, 0, 0, 4},
    {"v62 k3-exact RO=1 RB=2 tiles 64/64 2 vectors per pass 3 blocks/SM", expert_mlp_kernel<1, 2, 2, 1, 3, 2, 7, 6>, 64,
     64, 7, 6, 0, 0, 0, 0, 0, 0, 0, 0, 2, 110},
    {"v63 k3-exact RO=1 RB=2 tiles 64/64 2 vectors per pass", expert_mlp_kernel<1, 2, 2, 1, 2, 2, 7, 6>, 64, 64, 7, 6,
     0, 0, 0, 0, 0, 0, 0, 0, 2},
    {"v68 k3-exact RO=1 RB=2 tiles 64/64 4 vectors per pass one decode 3 blocks/SM",
     expert_mlp_kernel<1, 2, 4, 1, 3, 3, 7, 6>, 64, 64, 7, 6, 0, 0, 0, 0, 0, 0, 0, 0, 4, 200},
    {"v39 imma ring 4 stages tiles 64/128", expert_mlp_imma_kernel<1, 2, 3, 4>, imma::kTileA, 128, 0, 0, 2, 0, 1, 4},
    {"v38 imma tiles 64/128 3 blocks/SM", expert_mlp_imma_kernel<1, 2, 3>, imma::kTileA, 128, 0, 0, 2, 0, 1},
    {"v41 imma 2 vectors per pass tiles 64/128", expert_mlp_imma_kernel<2, 2, 2>, imma::kTileA, 128, 0, 0, 2, 0, 2},
    {"v51 ws imma 2 vectors 3 stages tiles 16/32", expert_mlp_ws_kernel<2, 3, 4, 4>, 16, 32, 0, 0, 3, 0, 2, 0, 3, 4, 4, 2},
    {"v55 ws imma 1 vector 3 stages tiles 16/32 16 warps", expert_mlp_ws_kernel<1, 3, 4, 8>, 16, 32, 0, 0, 4, 0, 1, 0, 3, 4, 8, 2},
    {"v20 mma fp16x3 cp.async", expert_mlp_mma_kernel<mma16::Big, false, true>, mma16::kTileA, mma16::kTileB, 0, 0, 1, 1},
    {"v22 mma fp16x3 cp.async 128-column stages 2 blocks/SM", expert_mlp_mma_kernel<mma16::Small, false, true, 2>,
     mma16::kTileA, mma16::kTileB, 0, 0, 1, 3},
    {"v21 mma fp16x3 cp.async float scales", expert_mlp_mma_kernel<mma16::Big, true, true>, mma16::kTileA, mma16::kTileB, 0,
     0, 1, 2},
    {"v16 mma fp16x3 tiles 128/256", expert_mlp_mma_kernel<mma16::Big, false, false>, mma16::kTileA, mma16::kTileB, 0, 0, 1,
     1},
    {"v134 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up decode by multiply-add and mask",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, true, direct::kFragLanes, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1},
    {"v212 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up decode by multiply-add and mask combine in the down tasks 32 fragment lanes scale tables two groups per loop step",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, false, 32, true, true, true, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 32, 1, 8, 1, 200},
    {"v192 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up decode by multiply-add and mask combine in the down tasks 32 fragment lanes scale tables",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, false, 32, true, true, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 32, 1, 0, 1},
    {"v193 traced (v192's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true, false, 32, true, true, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 32, 1, 0, 1},
    {"v194 mma fp16x3 fragment order one tile per warp 2 chunks ahead four vectors per pass decode by multiply-add and mask scale tables",
     expert_mlp_direct_kernel<2, 1, 2, 2, false, false, false, false, direct::kFragLanes, true, false, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 120, 1, 0, 0, 0, 0, 0, 1},
    {"v183 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up decode by multiply-add and mask combine in the down tasks 32 fragment lanes scales without a vote",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, false, 32, true, true>, direct::tile_a<1>(), direct::tile_b<1>(),
     0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 32, 1, 2},
    {"v184 traced (v183's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true, false, 32, true, true>, direct::tile_a<1>(), direct::tile_b<1>(),
     0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 32, 1},
    {"v138 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up decode by multiply-add and mask combine in the down tasks",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, true, direct::kFragLanes, true, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1, 2},
    {"v143 traced (v138's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true, true, direct::kFragLanes, true, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1},
    {"v126 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up decode on the FMA pipe",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0,
     0, 0, 0, 0, 1, 0, 1, 1, 1},
    {"v121 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0,
     0, 0, 0, 1, 0, 1, 1, 1},
    {"v131 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up decode on the FMA pipe 32 fragment lanes",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, true, 32>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0,
     0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 32},
    {"v135 mma fp16x3 fragment order one tile per warp 3 chunks ahead decode by multiply-add and mask",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, false, false, true, direct::kFragLanes, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1},
    {"v130 mma fp16x3 fragment order one tile per warp 3 chunks ahead decode on the FMA pipe",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, false, false, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0,
     0, 0, 0, 0, 0, 1, 0, 1},
    {"v96 mma fp16x3 fragment order one tile per warp 3 chunks ahead", expert_mlp_direct_kernel<3, 1, 2>,
     direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1},
    {"v136 mma fp16x3 fragment order one tile per warp 2 chunks ahead four vectors per pass decode by multiply-add and mask",
     expert_mlp_direct_kernel<2, 1, 2, 2, false, false, false, false, direct::kFragLanes, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1},
    {"v108 mma fp16x3 fragment order one tile per warp 2 chunks ahead four vectors per pass", expert_mlp_direct_kernel<2, 1, 2, 2>,
     direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1},
    {"v122 traced (v121's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0,
     0, 0, 0, 1, 0, 1, 1, 1},
    {"v91 mma fp16x3 fragment order 3 chunks ahead", expert_mlp_direct_kernel<3, 2, 2>, direct::tile_a<2>(),
     direct::tile_b<2>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2},
    {"v12 k3-exact RO=1 RB=2 tiles 64/64 4 blocks/SM", expert_mlp_kernel<1, 2, 1, 1, 4, 2, 7, 6>, 64, 64, 7, 6},
    {"v6 streamed RO=4 RB=8 tiles 64/64", expert_mlp_kernel<4, 8, 1, 1, 2, 1>, 64, 64},
    {"v2 RO=4 RB=8 tiles 32/32", expert_mlp_kernel<4, 8, 1, 1, 2, 0>, 32, 32},
};
constexpr int kNumVariants = sizeof(kVariants) / sizeof(kVariants[0]);

size_t smem_bytes(const Variant& v, int latent, int inter) {
  if (v.frag)
    return direct::smem_bytes(latent, inter, v.nv > 2 ? 2 : 1, v.lanes ? v.lanes : direct::kFragLanes, v.stab != 0);
  if (v.mma == 3) return mma16::smem_bytes<mma16::Small>(latent, inter, false);
  if (v.mma) return mma16::smem_bytes<mma16::Big>(latent, inter, v.mma == 2);
  if (v.ws) return ws::smem_bytes(latent, inter, v.imma, v.ws, v.rs, v.nq);
  if (v.imma) return imma::smem_bytes(latent, inter, v.imma, v.ring);
  return v.nk1 ? static_cast<size_t>(v.nv) * std::max(latent, inter) * sizeof(float) : 0;
}

// What the device offers: the tensor-core versions need Hopper (sm_90: bulk copies, mbarrier
// transactions) and 221 KB of shared memory per block, which consumer GPUs do not have.
struct DeviceLimits {
  int cc_major = 0;
  size_t smem_optin = 0;
};

bool fits(const Variant& v, int latent, int inter, const DeviceLimits& dl) {
  if (v.frag)
    return dl.cc_major >= 8 && (v.frag == 1 ? direct::fits<1>(latent, inter) : direct::fits<2>(latent, inter)) &&
           smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.ws) return dl.cc_major >= 9 && ws::fits(latent, inter, v.rs) && smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.imma)
    return dl.cc_major >= 8 && imma::fits(latent, inter, v.tile_b) && smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.mma == 3)
    return dl.cc_major >= 9 && mma16::fits<mma16::Small>(latent, inter, false) && smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.mma)
    return dl.cc_major >= 9 && mma16::fits<mma16::Big>(latent, inter, v.mma == 2) && smem_bytes(v, latent, inter) <= dl.smem_optin;
  return v.nk1 == 0 || (latent == v.nk1 * 512 && inter == v.nk2 * 512);
}

}  // namespace

struct ExpertMlp::Impl {
  int variant = 0;
  // Unless a version was selected by name, a call may run another version with the default's
  // reduction order (so the same bits: batch invariance holds across the switch): the `shared`
  // version with the highest threshold the call's rows per expert reach (they read an expert's
  // weights once for several rows).
  bool selected = false;
  std::vector<int> shared;  // versions with a `shared` threshold, highest threshold first
  int few = -1;             // the version with a `few` threshold, if one fits
  int pick(double rows_per_expert, int T) const {
    if (selected) return variant;
    if (few >= 0 && T <= kVariants[few].few && rows_per_expert * 100 < kVariants[few].few_share) return few;
    for (int v : shared)
      if (rows_per_expert * 100 >= kVariants[v].shared) return v;
    if (few >= 0 && T <= kVariants[few].few) return few;
    return variant;
  }
  int blocks_per_sm[kNumVariants] = {};  // per version, from the occupancy calculator
  static int threads_of(const Variant& v) { return v.ws ? ws::threads(v.rs, v.nq, v.nr) : kThreads; }
  // Blocks per SM of version vi at these widths (asked once, after allowing its shared memory).
  int blocks(int vi, int latent, int inter) {
    int& bps = blocks_per_sm[vi];
    if (!bps) {
      const Variant& v = kVariants[vi];
      const size_t smem = smem_bytes(v, latent, inter);
      // Static shared memory (MetaTables) counts towards the 48 KB a launch may use without opting in.
      cudaFuncAttributes fa{};
      DELTAFIN_CUDA_CHECK(cudaFuncGetAttributes(&fa, v.fn));
      if (smem + fa.sharedSizeBytes > 48 * 1024)
        DELTAFIN_CUDA_CHECK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      DELTAFIN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, v.fn, threads_of(v), smem));
      if (bps < 1) bps = 1;
    }
    return bps;
  }
  int sms = 0;
  DeviceLimits limits;
  bool few_wave_grid = true;  // set_few_wave_grid
  int max_assign = 0;
  DeviceBuffer h, d, counters, tables, hmax;
  DeviceBuffer rowdone;  // fused-combine versions: [max_rows][latent / 16] counts, 0 between calls
  // A ring of table slots (pinned host copy + device copy each), so that a call never waits for
  // the previous call's upload: the host runs ahead of the GPU as with any other launch.
  static constexpr int kSlots = 8;
  void* staging = nullptr;  // kSlots x staging_bytes, pinned
  size_t staging_bytes = 0;
  cudaEvent_t staged[kSlots]{};
  int next_slot = 0;
  // Where the counters stand after the calls queued so far: run() never resets them between
  // calls (no memset before its launch); run_routed's table builder resets them on the device.
  bool counters_known = false;
  unsigned ticket_base = 0;
  std::vector<unsigned> doneA_base, doneB_base;  // [max_assign]
  DeviceBuffer zeros;                            // [max_assign] zero bases for run_routed
  // plan_routed's tables, waiting for run_planned.
  struct Plan {
    bool ready = false;
    int T = 0, vi = 0, nG = 0;
    const char* dt = nullptr;
  };
  Plan plan;

  // Byte offsets of the routing tables for nG groups and A slots, in a staging slot (run) and in
  // the matching slot of `tables` alike.
  struct Layout {
    size_t exp, beg, list, sg, w, ab, bb, end;
  };
  static Layout layout(int nG, int A) {
    size_t off = 0;
    auto take = [&](size_t bytes) {
      off = (off + 15) & ~size_t(15);
      const size_t at = off;
      off += bytes;
      return at;
    };
    Layout L{};
    L.exp = take(nG * sizeof(MxExpert));
    L.beg = take((nG + 1) * sizeof(int));
    L.list = take(A * sizeof(int));
    L.sg = take(A * sizeof(int));
    L.w = take(A * sizeof(float));
    L.ab = take(nG * sizeof(unsigned));
    L.bb = take(nG * sizeof(unsigned));
    L.end = off;
    return L;
  }
  // What one launch adds to the counters: every block takes one ticket per task it runs plus the
  // one that ends its loop; every group's doneA / doneB count its gate/up / down tiles.
  struct Counts {
    unsigned tickets, a_tiles, b_tiles;
  };
  // The expert kernel over tables at dt (layout L) whose counters start at ticket_base and, per
  // group, at doneA_base / doneB_base.
  Counts launch(const ExpertMlp& m, int vi, int nG, int T, const char* dt, const Layout& L, unsigned ticket_base,
                  const unsigned* doneA_base, const unsigned* doneB_base, const float* dev_z, float* dev_y,
                  cudaStream_t s);
};

namespace {

// Blocks for a call of `total` tasks on `sms` SMs that hold `bps` blocks each. A call of a few waves
// of tasks whose last wave is partly empty (K3 at T = 1: 1,216 tasks, 4.6 waves of 264 blocks on an
// H200, so 104 blocks idle through the last task) runs faster on the fewest blocks that keep its
// number of waves w, counting on the blocks alone on their SM to run one task more than the paired
// ones: fewer blocks share the memory system meanwhile, and none idles early. With g blocks,
// 2 sms - g of them are alone, so w g + (2 sms - g) >= total gives g = (total - 2 sms) / (w - 1).
// Measured on H200s (docs/PERFORMANCE.md, session 22) at T = 1 with 8-16 experts per row, the last
// wave filled to 0.30, 0.45 and 0.61 gained 2-3 points of D2D (K3: 238 blocks, 76% instead of 74%),
// filled to 0.03 or 0.88 lost 3-3.6 (that wave costs little, or the lone blocks cannot keep up), and
// calls of more waves (T = 2: 9.2) lost too. So the rule applies from 2 to kFewWaves waves with the
// last one filled to between a quarter and three quarters, unless the caller runs other work beside
// the kernel (ExpertMlp::set_few_wave_grid(false)); other calls keep the full grid. The grid
// never changes a result: a task computes the same whichever block runs it. set_expert_grid
// (DELTAFIN_CUDA_EXPERT_GRID=n) caps it, for measuring.
std::atomic<unsigned> g_grid_cap{[] {
  const char* e = std::getenv("DELTAFIN_CUDA_EXPERT_GRID");
  return e ? static_cast<unsigned>(std::strtoul(e, nullptr, 10)) : 0u;
}()};

unsigned expert_grid(unsigned total, unsigned sms, unsigned bps, bool few_wave_grid) {
  const unsigned forced = g_grid_cap.load(std::memory_order_relaxed);
  const unsigned cap = sms * bps;
  if (forced) return std::min({total, cap, forced});
  if (total <= cap) return total;
  if (!few_wave_grid) return cap;
  const unsigned waves = (total + cap - 1) / cap;
  const unsigned last = total - (waves - 1) * cap;  // tasks in the last wave, 1..cap
  if (bps != 2 || waves > kFewWaves || 4 * last < cap || 4 * last > 3 * cap) return cap;
  const unsigned g = (total - cap + waves - 2) / (waves - 1);  // ceil((total - 2 sms) / (w - 1))
  return std::max(sms, std::min(cap, g));
}

DeviceLimits current_limits(int* sms = nullptr) {
  int dev = 0;
  DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
  DeviceLimits dl;
  if (sms) DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
  DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&dl.cc_major, cudaDevAttrComputeCapabilityMajor, dev));
  int optin = 0;
  DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  dl.smem_optin = static_cast<size_t>(optin);
  return dl;
}

// The version DELTAFIN_CUDA_EXPERT_VERSION=vNN names for these shapes (-1: unset; -2: none fits).
int env_version(int latent, int inter, const DeviceLimits& dl) {
  const char* e = std::getenv("DELTAFIN_CUDA_EXPERT_VERSION");
  if (!e || !*e) return -1;
  const std::string want = std::string(e) + " ";
  for (int v = 0; v < kNumVariants; ++v)
    if (std::string(kVariants[v].name).rfind(want, 0) == 0 && fits(kVariants[v], latent, inter, dl)) return v;
  return -2;
}

}  // namespace

ExpertLayout ExpertMlp::preferred_layout(int latent, int inter) {
  if (const char* e = std::getenv("DELTAFIN_CUDA_EXPERT_LAYOUT"); e && std::string(e) == "rows") return ExpertLayout::rows;
  const DeviceLimits dl = current_limits();
  if (const int v = env_version(latent, inter, dl); v != -1)
    return v >= 0 && kVariants[v].frag ? ExpertLayout::fragments : ExpertLayout::rows;
  for (const Variant& v : kVariants)
    if (v.frag && fits(v, latent, inter, dl)) return ExpertLayout::fragments;
  return ExpertLayout::rows;
}

ExpertMlp::ExpertMlp(int latent, int inter, int top_k, int max_rows, ExpertLayout layout)
    : latent_(latent), inter_(inter), top_k_(top_k), max_rows_(max_rows), layout_(layout), impl_(new Impl) {
  try {
    if (latent <= 0 || inter <= 0 || latent % 32 || inter % 32)
      throw CudaError("ExpertMlp: latent (" + std::to_string(latent) + ") and intermediate (" + std::to_string(inter) +
                      ") widths must be positive multiples of 32");
    if (top_k <= 0 || max_rows <= 0) throw CudaError("ExpertMlp: top_k and max_rows must be positive");
    impl_->limits = current_limits(&impl_->sms);
    // The default: the first version that fits and reads the caller's layout.
    const bool frag = layout == ExpertLayout::fragments;
    impl_->variant = -1;
    for (int v = 0; v < kNumVariants && impl_->variant < 0; ++v)
      if ((kVariants[v].frag != 0) == frag && fits(kVariants[v], latent, inter, impl_->limits)) impl_->variant = v;
    if (impl_->variant < 0)
      throw CudaError("ExpertMlp: no " + std::string(frag ? "fragment-order" : "row-layout") + " version fits latent " +
                      std::to_string(latent) + " x intermediate " + std::to_string(inter) +
                      " on this device (store the experts in ExpertMlp::preferred_layout)");
    for (int v = 0; v < kNumVariants; ++v) {
      if (kVariants[v].order != kVariants[impl_->variant].order || (kVariants[v].frag != 0) != frag ||
          !fits(kVariants[v], latent, inter, impl_->limits))
        continue;
      // A fragment-order `shared` version (v108: twice the shared memory) only where it keeps the
      // default's blocks per SM: GPUs with ~100 KB per SM would run it at half the warps.
      if (kVariants[v].frag && kVariants[v].shared > 0 &&
          impl_->blocks(v, latent, inter) < impl_->blocks(impl_->variant, latent, inter))
        continue;
      if (kVariants[v].shared > 0) impl_->shared.push_back(v);
      if (kVariants[v].few > 0 && impl_->few < 0 &&
          impl_->blocks(v, latent, inter) >= impl_->blocks(impl_->variant, latent, inter))
        impl_->few = v;
    }
    std::stable_sort(impl_->shared.begin(), impl_->shared.end(),
                     [](int a, int b) { return kVariants[a].shared > kVariants[b].shared; });
    // DELTAFIN_CUDA_EXPERT_VERSION=vNN (measurements): that version, as if selected by name.
    if (const int v = env_version(latent, inter, impl_->limits); v != -1) {
      if (v < 0 || (kVariants[v].frag != 0) != frag)
        throw CudaError("DELTAFIN_CUDA_EXPERT_VERSION=" + std::string(std::getenv("DELTAFIN_CUDA_EXPERT_VERSION")) +
                        ": no expert kernel version of that number fits these shapes on this device and reads " +
                        (frag ? "fragment-order" : "row-layout") + " experts (unset it for the default)");
      impl_->variant = v;
      impl_->selected = true;
    }
    const int64_t A = static_cast<int64_t>(max_rows) * top_k;
    impl_->max_assign = static_cast<int>(A);
    impl_->h = DeviceBuffer(static_cast<size_t>(A) * inter * sizeof(float));
    impl_->d = DeviceBuffer(static_cast<size_t>(A) * latent * sizeof(float));
    impl_->counters = DeviceBuffer((1 + 2 * static_cast<size_t>(A)) * sizeof(unsigned));
    impl_->staging_bytes = (static_cast<size_t>(A) * sizeof(MxExpert) + (A + 1 + A + A) * sizeof(int) + A * sizeof(float) +
                            2 * A * sizeof(unsigned) + 128 + 255) & ~size_t(255);
    impl_->tables = DeviceBuffer(impl_->staging_bytes * Impl::kSlots);
    DELTAFIN_CUDA_CHECK(cudaMallocHost(&impl_->staging, impl_->staging_bytes * Impl::kSlots));
    for (cudaEvent_t& e : impl_->staged) DELTAFIN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    impl_->doneA_base.assign(static_cast<size_t>(A), 0u);
    impl_->doneB_base.assign(static_cast<size_t>(A), 0u);
    impl_->zeros = DeviceBuffer(static_cast<size_t>(A) * sizeof(unsigned));
    impl_->zeros.fill_byte(0);
    impl_->hmax = DeviceBuffer(static_cast<size_t>(A) * sizeof(unsigned));
    impl_->hmax.fill_byte(0);
    impl_->rowdone = DeviceBuffer(static_cast<size_t>(max_rows) * ((latent + 15) / 16) * sizeof(unsigned));
    impl_->rowdone.fill_byte(0);
  } catch (...) {
    for (cudaEvent_t e : impl_->staged)
      if (e) cudaEventDestroy(e);
    if (impl_->staging) cudaFreeHost(impl_->staging);
    delete impl_;
    throw;
  }
}

ExpertMlp::~ExpertMlp() {
  for (cudaEvent_t e : impl_->staged) {
    cudaEventSynchronize(e);
    cudaEventDestroy(e);
  }
  cudaFreeHost(impl_->staging);
  delete impl_;
}

const char* ExpertMlp::variant() const { return kVariants[impl_->variant].name; }

std::vector<std::string> ExpertMlp::variants() const {
  std::vector<std::string> out;
  for (const Variant& v : kVariants)
    if (fits(v, latent_, inter_, impl_->limits)) out.push_back(v.name);
  return out;
}

bool ExpertMlp::fragment_layout() const { return kVariants[impl_->variant].frag != 0; }

int ExpertMlp::reduction_order(const std::string& name) const {
  for (const Variant& v : kVariants)
    if (name == v.name) return v.order;
  throw CudaError("ExpertMlp: no kernel variant named '" + name + "'");
}

void ExpertMlp::set_few_wave_grid(bool on) { impl_->few_wave_grid = on; }

void ExpertMlp::select_variant(const std::string& name) {
  for (int v = 0; v < kNumVariants; ++v) {
    if (name != kVariants[v].name || !fits(kVariants[v], latent_, inter_, impl_->limits)) continue;
    impl_->variant = v;
    impl_->selected = true;
    return;
  }
  throw CudaError("ExpertMlp: no kernel variant named '" + name + "' fits these shapes");
}

void ExpertMlp::run(const std::vector<MxExpert>& experts, const int32_t* slot_expert, const float* slot_weight, int T,
                    const float* dev_z, float* dev_y, Stream stream) {
  if (T < 0 || T > max_rows_)
    throw CudaError("ExpertMlp::run: T = " + std::to_string(T) + " is outside 0.." + std::to_string(max_rows_));
  if (T == 0) return;
  const int K = top_k_;
  const int nA_assign = T * K;
  const int nG = static_cast<int>(experts.size());
  if (nG <= 0 || nG > nA_assign)
    throw CudaError("ExpertMlp::run: " + std::to_string(nG) + " distinct experts for " + std::to_string(nA_assign) +
                    " slots (pass only the experts the slots use)");
  for (int a = 0; a < nA_assign; ++a)
    if (slot_expert[a] < 0 || slot_expert[a] >= nG)
      throw CudaError("ExpertMlp::run: slot " + std::to_string(a) + " names expert " + std::to_string(slot_expert[a]) +
                      ", outside the " + std::to_string(nG) + " passed");
  for (const MxExpert& e : experts)
    if (!e.gate_packed || !e.gate_scale || !e.up_packed || !e.up_scale || !e.down_packed || !e.down_scale ||
        reinterpret_cast<uintptr_t>(e.gate_packed) % 8 || reinterpret_cast<uintptr_t>(e.up_packed) % 8 ||
        reinterpret_cast<uintptr_t>(e.down_packed) % 8)
      throw CudaError("ExpertMlp::run: every expert needs six device pointers, packed weights 8-byte aligned");
  // The tensor-core version copies rows in 16-byte units; with other alignments the call takes the
  // first FFMA version that fits (its bits differ, see Variant::order).
  int vi = impl_->pick(static_cast<double>(nA_assign) / nG, T);
  if (kVariants[vi].frag) {
    // No fallback here: another layout's version would misread the bytes.
    for (const MxExpert& e : experts)
      for (const void* p : {e.gate_packed, e.gate_scale, e.up_packed, e.up_scale, e.down_packed, e.down_scale})
        if (reinterpret_cast<uintptr_t>(p) % 16)
          throw CudaError(std::string("ExpertMlp::run: ") + kVariants[vi].name +
                          " needs every expert tensor 16-byte aligned (repack_mx_fragments output)");
  } else if ((kVariants[vi].mma || kVariants[vi].imma) && layout_ == ExpertLayout::rows) {
    bool aligned = true;
    for (const MxExpert& e : experts)
      for (const void* p : {e.gate_packed, e.gate_scale, e.up_packed, e.up_scale, e.down_packed, e.down_scale})
        aligned = aligned && reinterpret_cast<uintptr_t>(p) % 16 == 0;
    for (int v = 0; !aligned && v < kNumVariants; ++v)
      if (!kVariants[v].mma && !kVariants[v].imma && !kVariants[v].frag && fits(kVariants[v], latent_, inter_, impl_->limits)) {
        vi = v;
        aligned = true;
      }
  }

  // This slot's staging buffer may still be feeding the copy of the call kSlots calls ago.
  const int slot = impl_->next_slot;
  impl_->next_slot = (slot + 1) % Impl::kSlots;
  DELTAFIN_CUDA_CHECK(cudaEventSynchronize(impl_->staged[slot]));
  char* st = static_cast<char*>(impl_->staging) + impl_->staging_bytes * slot;
  const Impl::Layout L = Impl::layout(nG, nA_assign);
  if (L.end > impl_->staging_bytes) throw CudaError("ExpertMlp::run: internal table overflow");
  std::memcpy(st + L.exp, experts.data(), nG * sizeof(MxExpert));
  int* beg = reinterpret_cast<int*>(st + L.beg);
  int* list = reinterpret_cast<int*>(st + L.list);
  std::memset(beg, 0, (nG + 1) * sizeof(int));
  for (int a = 0; a < nA_assign; ++a) ++beg[slot_expert[a] + 1];
  for (int g = 0; g < nG; ++g) beg[g + 1] += beg[g];
  {
    std::vector<int> fill(beg, beg + nG);
    for (int a = 0; a < nA_assign; ++a) list[fill[slot_expert[a]]++] = a;
  }
  std::memcpy(st + L.sg, slot_expert, nA_assign * sizeof(int));
  std::memcpy(st + L.w, slot_weight, nA_assign * sizeof(float));
  for (int g = 0; g < nG; ++g)
    if (beg[g + 1] == beg[g])
      throw CudaError("ExpertMlp::run: expert " + std::to_string(g) + " is passed but no slot uses it");

  const cudaStream_t s = as_stream(stream);
  if (!impl_->counters_known) {
    DELTAFIN_CUDA_CHECK(cudaMemsetAsync(impl_->counters.data(), 0, impl_->counters.size(), s));
    impl_->ticket_base = 0;
    std::fill(impl_->doneA_base.begin(), impl_->doneA_base.end(), 0u);
    std::fill(impl_->doneB_base.begin(), impl_->doneB_base.end(), 0u);
    impl_->counters_known = true;
  }
  std::memcpy(st + L.ab, impl_->doneA_base.data(), nG * sizeof(unsigned));
  std::memcpy(st + L.bb, impl_->doneB_base.data(), nG * sizeof(unsigned));
  char* dt = impl_->tables.as<char>() + impl_->staging_bytes * slot;
  DELTAFIN_CUDA_CHECK(cudaMemcpyAsync(dt, st, L.end, cudaMemcpyHostToDevice, s));
  DELTAFIN_CUDA_CHECK(cudaEventRecord(impl_->staged[slot], s));
  const Impl::Counts added = impl_->launch(*this, vi, nG, T, dt, L, impl_->ticket_base,
                                           reinterpret_cast<const unsigned*>(dt + L.ab),
                                           reinterpret_cast<const unsigned*>(dt + L.bb), dev_z, dev_y, s);
  impl_->ticket_base += added.tickets;
  for (int g = 0; g < nG; ++g) {
    impl_->doneA_base[g] += added.a_tiles;
    impl_->doneB_base[g] += added.b_tiles;
  }
}

void ExpertMlp::run_routed(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight,
                           int T, const float* dev_z, float* dev_y, Stream stream) {
  plan_routed(dev_table, n_experts, dev_idx, dev_weight, T, stream);
  run_planned(T, dev_z, dev_y, stream);
}

void ExpertMlp::plan_routed(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight,
                            int T, Stream stream) {
  if (T < 0 || T > max_rows_)
    throw CudaError("ExpertMlp::run_routed: T = " + std::to_string(T) + " is outside 0.." + std::to_string(max_rows_));
  impl_->plan = Impl::Plan{};
  if (T == 0) return;
  if (!dev_table || n_experts < top_k_)
    throw CudaError("ExpertMlp::run_routed: a table of " + std::to_string(n_experts) + " experts for top-" +
                    std::to_string(top_k_) + " routing");
  const int A = T * top_k_;
  // The distinct experts are known only on the device: plan for the most there can be. At T = 1
  // that is exactly top_k (a row's experts are distinct), so nothing is wasted there.
  const int nG = std::min(n_experts, A);
  // The distinct experts are known only on the device; expect what a uniformly random router
  // would give (E (1 - (1 - k/E)^T)): routers whose neighbouring rows agree share more.
  const double expected_distinct = n_experts * (1.0 - std::pow(1.0 - static_cast<double>(top_k_) / n_experts, T));
  const int vi = impl_->pick(A / std::max(1.0, expected_distinct), T);
  const Variant& v = kVariants[vi];
  const Impl::Layout L = Impl::layout(nG, A);
  if (L.end > impl_->staging_bytes) throw CudaError("ExpertMlp::run_routed: internal table overflow");
  // Its own table slot (the one run() would use next): a run() call queued before on this stream
  // is done with it by then, in stream order.
  const int slot = impl_->next_slot;
  impl_->next_slot = (slot + 1) % Impl::kSlots;
  char* dt = impl_->tables.as<char>() + impl_->staging_bytes * slot;
  unsigned* ctr = impl_->counters.as<unsigned>();
  RoutingTables out{reinterpret_cast<MxExpert*>(dt + L.exp), reinterpret_cast<int*>(dt + L.beg),
                    reinterpret_cast<int*>(dt + L.list), reinterpret_cast<int*>(dt + L.sg),
                    reinterpret_cast<float*>(dt + L.w), ctr, ctr + 1, ctr + 1 + impl_->max_assign};
  // The warp-specialised versions skip unused groups themselves (they cut chunks by cost, and
  // unused groups cost nothing), so their ticket and counters start at 0.
  build_routing_tables(dev_table, n_experts, dev_idx, dev_weight, T, top_k_, nG,
                       v.ws ? 0 : (inter_ + v.tile_a - 1) / v.tile_a, (v.mma || v.imma || v.frag) ? 16 : 8, out, as_stream(stream));
  // The builder resets the counters: they start at 0 for run_planned, and run() must reset them again.
  impl_->counters_known = false;
  impl_->plan = Impl::Plan{true, T, vi, nG, dt};
}

void ExpertMlp::run_planned(int T, const float* dev_z, float* dev_y, Stream stream) {
  if (T == 0) return;
  const Impl::Plan p = impl_->plan;
  if (!p.ready || p.T != T)
    throw CudaError("ExpertMlp::run_planned: no plan_routed for " + std::to_string(T) + " rows before it");
  impl_->plan = Impl::Plan{};
  const unsigned* zeros = impl_->zeros.as<unsigned>();
  impl_->launch(*this, p.vi, p.nG, T, p.dt, Impl::layout(p.nG, T * top_k_), 0u, zeros, zeros, dev_z, dev_y,
                as_stream(stream));
  impl_->counters_known = false;
}

ExpertMlp::Impl::Counts ExpertMlp::Impl::launch(const ExpertMlp& m, int vi, int nG, int T, const char* dt, const Layout& L,
                                 unsigned ticket_base, const unsigned* doneA_base, const unsigned* doneB_base,
                                 const float* dev_z, float* dev_y, cudaStream_t s) {
  if (kVariants[vi].meta && !meta_fits(nG, T * m.top_k_)) {
    // The same order and layout without the shared copy of the tables: the same bits.
    const Variant& w = kVariants[vi];
    for (int u = 0; u < kNumVariants; ++u)
      if (!kVariants[u].meta && kVariants[u].order == w.order && kVariants[u].frag == w.frag) {
        vi = u;
        break;
      }
    if (kVariants[vi].meta) throw CudaError(std::string("ExpertMlp: no version without shared tables for ") + w.name);
  }
  Params P{};
  P.experts = reinterpret_cast<const MxExpert*>(dt + L.exp);
  P.grp_begin = reinterpret_cast<const int*>(dt + L.beg);
  P.assign_list = reinterpret_cast<const int*>(dt + L.list);
  P.slot_group = reinterpret_cast<const int*>(dt + L.sg);
  P.slot_weight = reinterpret_cast<const float*>(dt + L.w);
  P.z = dev_z;
  P.y = dev_y;
  P.h = h.as<float>();
  P.d = d.as<float>();
  unsigned* ctr = counters.as<unsigned>();
  P.ticket = ctr;
  P.doneA = ctr + 1;
  P.doneB = ctr + 1 + max_assign;
  P.ticket_base = ticket_base;
  P.doneA_base = doneA_base;
  P.doneB_base = doneB_base;
  P.nG = nG;
  P.T = T;
  P.K = m.top_k_;
  P.latent = m.latent_;
  P.inter = m.inter_;
  const Variant& v = kVariants[vi];
  P.tile_a = v.tile_a;
  P.tile_b = v.tile_b;
  P.a_tiles = (m.inter_ + P.tile_a - 1) / P.tile_a;
  P.b_tiles = (m.latent_ + P.tile_b - 1) / P.tile_b;
  P.c_tiles = (m.latent_ + kTileC - 1) / kTileC;
  P.nA = static_cast<unsigned>(nG * P.a_tiles);
  P.nB = static_cast<unsigned>(nG * P.b_tiles);
  P.nC = v.fuse ? 0u : static_cast<unsigned>(T * P.c_tiles);
  P.rowdone = v.fuse ? rowdone.as<unsigned>() : nullptr;

  const size_t smem = smem_bytes(v, m.latent_, m.inter_);
  const int threads = threads_of(v);
  const int bps = blocks(vi, m.latent_, m.inter_);
  const unsigned total = P.nA + P.nB + P.nC;
  const unsigned cap = static_cast<unsigned>(sms * bps);
  // Warp-specialised versions: one block per SM, each taking one chunk of each phase (every block
  // takes the tickets of its chunks and tasks plus the one that ends its loop).
  const unsigned grid = v.ws ? cap : expert_grid(total, static_cast<unsigned>(sms), static_cast<unsigned>(bps), few_wave_grid);
  P.chunks = static_cast<int>(grid);
  P.hmax = v.hmax ? hmax.as<unsigned>() : nullptr;
  DELTAFIN_CUDA_CHECK(::deltafin::cuda::launch(v.fn, grid, threads, smem, s, P));
  const unsigned tickets = v.ws ? 3 * grid + P.nC : total + grid;
  return Counts{tickets, static_cast<unsigned>(P.a_tiles), static_cast<unsigned>(P.b_tiles)};
}

void set_expert_grid(unsigned blocks) { g_grid_cap.store(blocks, std::memory_order_relaxed); }

void set_expert_trace(unsigned long long* dev_records) {
  DELTAFIN_CUDA_CHECK(cudaMemcpyToSymbol(g_expert_trace, &dev_records, sizeof dev_records));
}

void repack_mx_fragments(const void* packed, void* out, int rows, int cols, Stream stream) {
  if (rows <= 0 || cols <= 0 || rows % 16 || cols % 64)
    throw CudaError("repack_mx_fragments: " + std::to_string(rows) + " x " + std::to_string(cols) +
                    " codes; rows must be a multiple of 16 and columns of 64");
  if (!packed || !out || reinterpret_cast<uintptr_t>(packed) % 4 || reinterpret_cast<uintptr_t>(out) % 16)
    throw CudaError("repack_mx_fragments: the source must be 4-byte and the destination 16-byte aligned device memory");
  const size_t bytes = static_cast<size_t>(rows) * cols / 2;
  const char* a = static_cast<const char*>(packed);
  const char* b = static_cast<const char*>(out);
  if (a < b + bytes && b < a + bytes) throw CudaError("repack_mx_fragments: source and destination overlap (no in-place repack)");
  const int64_t n = static_cast<int64_t>(bytes / 16);
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 4096));
  direct::repack_kernel<<<blocks, 256, 0, as_stream(stream)>>>(static_cast<const uint32_t*>(packed), static_cast<uint4*>(out),
                                                              rows, cols);
  DELTAFIN_CUDA_LAUNCHED("repack_mx_fragments");
}

}  // namespace deltafin::cuda
