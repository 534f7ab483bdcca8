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
#include <cstring>
#include <vector>

#include <cuda_fp16.h>

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileA = 32;    // intermediate rows per A task
constexpr int kTileB = 32;    // latent rows per B task
constexpr int kTileC = 1024;  // latent columns per C task

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
  unsigned* ticket;
  unsigned* doneA;
  unsigned* doneB;
  int nG, T, K, latent, inter;
  int a_tiles, b_tiles, c_tiles;
  unsigned nA, nB, nC;
};

__device__ __forceinline__ float e8m0(uint32_t s) { return s ? __uint_as_float(s << 23) : __uint_as_float(0x00400000u); }

__device__ __forceinline__ float2 h2f(uint32_t v) {
  __half2 h;
  memcpy(&h, &v, 4);
  return __half22float2(h);
}

// Sum over the 8 columns held by one 32-bit word of packed codes, times 2^-14. An E2M1 code
// s|e1 e0 m becomes the fp16 whose high byte is s000 e1 e0 m 0: that fp16 is exactly the E2M1 value
// times 2^-14 (codes with e = 0 land on fp16 subnormals, which is what makes 0 and 0.5 come out
// right). Pairs go to half2 words with one byte permute each; the caller restores 2^14.
__device__ __forceinline__ float dot8(uint32_t w, float4 xa, float4 xb, float p) {
  const uint32_t ev = ((w << 1) & 0x0E0E0E0Eu) | ((w << 4) & 0x80808080u);  // even columns (low nibbles)
  const uint32_t od = ((w >> 3) & 0x0E0E0E0Eu) | (w & 0x80808080u);         // odd columns (high nibbles)
  const float2 c02 = h2f(__byte_perm(ev, 0u, 0x1404));
  const float2 c46 = h2f(__byte_perm(ev, 0u, 0x3424));
  const float2 c13 = h2f(__byte_perm(od, 0u, 0x1404));
  const float2 c57 = h2f(__byte_perm(od, 0u, 0x3424));
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

__device__ __forceinline__ void wait_at_least(const unsigned* ctr, unsigned target) {
  while (ld_acquire(ctr) < target) __nanosleep(100);
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
  const int o_end = min(P.inter, (tile + 1) * kTileA);
  for (int o0 = tile * kTileA + warp * RO; o0 < o_end; o0 += kWarps * RO) {
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
  const int o_end = min(P.latent, (tile + 1) * kTileB);
  for (int o0 = tile * kTileB + warp * RB; o0 < o_end; o0 += kWarps * RB) {
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

__device__ __forceinline__ void task_combine(const Params& P, int t, int tile) {
  const int o_end = min(P.latent, (tile + 1) * kTileC);
  for (int o = tile * kTileC + threadIdx.x; o < o_end; o += kThreads) {
    float acc = 0.f;
    for (int j = 0; j < P.K; ++j) {
      const int a = t * P.K + j;
      acc = __fmaf_rn(__ldg(P.slot_weight + a), __ldcg(P.d + static_cast<int64_t>(a) * P.latent + o), acc);
    }
    P.y[static_cast<int64_t>(t) * P.latent + o] = acc;
  }
}

template <int RO, int RB, int NA, int U, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) expert_mlp_kernel(const Params P) {
  __shared__ unsigned s_task;
  const unsigned total = P.nA + P.nB + P.nC;
  if (threadIdx.x == 0) s_task = atomicAdd(P.ticket, 1u);
  __syncthreads();
  unsigned task = s_task;
  while (task < total) {
    __syncthreads();  // everyone has read s_task
    unsigned next = 0;
    if (threadIdx.x == 0) next = atomicAdd(P.ticket, 1u);  // in flight while this task runs
    if (task < P.nA) {
      const int g = static_cast<int>(task) / P.a_tiles;
      task_gate_up<RO, NA, U>(P, g, static_cast<int>(task) % P.a_tiles);
      signal_done(P.doneA + g);
    } else if (task < P.nA + P.nB) {
      const int b = static_cast<int>(task - P.nA);
      const int g = b / P.b_tiles;
      if (threadIdx.x == 0) wait_at_least(P.doneA + g, static_cast<unsigned>(P.a_tiles));
      __syncthreads();
      task_down<RB, NA, U>(P, g, b % P.b_tiles);
      signal_done(P.doneB + g);
    } else {
      const int c = static_cast<int>(task - P.nA - P.nB);
      const int t = c / P.c_tiles;
      if (threadIdx.x == 0)
        for (int j = 0; j < P.K; ++j) wait_at_least(P.doneB + P.slot_group[t * P.K + j], static_cast<unsigned>(P.b_tiles));
      __syncthreads();
      task_combine(P, t, c % P.c_tiles);
    }
    if (threadIdx.x == 0) s_task = next;
    __syncthreads();
    task = s_task;
  }
}

using KernelFn = void (*)(Params);

// Numbered versions (kept for the checker and the benchmark); the first is the default, chosen
// by measurement on an H200 (docs/PERFORMANCE.md). RO/RB: gate-up / down rows per warp pass;
// NA: assignments per pass over the weights; U: chunk iterations unrolled (loads in flight);
// last: blocks per SM the registers are capped for.
struct Variant {
  const char* name;
  KernelFn fn;
};
const Variant kVariants[] = {
    {"v1 RO=2 RB=4 NA=1 U=2", expert_mlp_kernel<2, 4, 1, 2, 2>},
    {"v2 RO=4 RB=8 NA=1 U=1", expert_mlp_kernel<4, 8, 1, 1, 2>},
    {"v3 RO=1 RB=2 NA=1 U=2", expert_mlp_kernel<1, 2, 1, 2, 3>},
    {"v4 RO=2 RB=4 NA=2 U=1", expert_mlp_kernel<2, 4, 2, 1, 1>},
};
constexpr int kNumVariants = sizeof(kVariants) / sizeof(kVariants[0]);

}  // namespace

struct ExpertMlp::Impl {
  int variant = 0;
  int blocks_per_sm = 0, sms = 0;
  int max_assign = 0;
  DeviceBuffer h, d, counters, tables;
  void* staging = nullptr;  // pinned host copy of the tables
  size_t staging_bytes = 0;
  cudaEvent_t staged{};
};

ExpertMlp::ExpertMlp(int latent, int inter, int top_k, int max_rows)
    : latent_(latent), inter_(inter), top_k_(top_k), max_rows_(max_rows), impl_(new Impl) {
  try {
    if (latent <= 0 || inter <= 0 || latent % 32 || inter % 32)
      throw CudaError("ExpertMlp: latent (" + std::to_string(latent) + ") and intermediate (" + std::to_string(inter) +
                      ") widths must be positive multiples of 32");
    if (top_k <= 0 || max_rows <= 0) throw CudaError("ExpertMlp: top_k and max_rows must be positive");
    impl_->variant = 0;
    const int64_t A = static_cast<int64_t>(max_rows) * top_k;
    impl_->max_assign = static_cast<int>(A);
    impl_->h = DeviceBuffer(static_cast<size_t>(A) * inter * sizeof(float));
    impl_->d = DeviceBuffer(static_cast<size_t>(A) * latent * sizeof(float));
    impl_->counters = DeviceBuffer((1 + 2 * static_cast<size_t>(A)) * sizeof(unsigned));
    impl_->staging_bytes = static_cast<size_t>(A) * sizeof(MxExpert) + (A + 1 + A + A) * sizeof(int) + A * sizeof(float) + 64;
    impl_->tables = DeviceBuffer(impl_->staging_bytes);
    DELTAFIN_CUDA_CHECK(cudaMallocHost(&impl_->staging, impl_->staging_bytes));
    DELTAFIN_CUDA_CHECK(cudaEventCreateWithFlags(&impl_->staged, cudaEventDisableTiming));
    int dev = 0;
    DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
    DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&impl_->sms, cudaDevAttrMultiProcessorCount, dev));
  } catch (...) {
    if (impl_->staging) cudaFreeHost(impl_->staging);
    delete impl_;
    throw;
  }
}

ExpertMlp::~ExpertMlp() {
  cudaEventSynchronize(impl_->staged);
  cudaEventDestroy(impl_->staged);
  cudaFreeHost(impl_->staging);
  delete impl_;
}

const char* ExpertMlp::variant() const { return kVariants[impl_->variant].name; }

std::vector<std::string> ExpertMlp::variants() const {
  std::vector<std::string> out;
  for (const Variant& v : kVariants) out.push_back(v.name);
  return out;
}

void ExpertMlp::select_variant(const std::string& name) {
  for (int v = 0; v < kNumVariants; ++v) {
    if (name != kVariants[v].name) continue;
    impl_->variant = v;
    impl_->blocks_per_sm = 0;
    return;
  }
  throw CudaError("ExpertMlp: no kernel variant named '" + name + "'");
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

  // The staging buffer may still be feeding the previous launch's copy.
  DELTAFIN_CUDA_CHECK(cudaEventSynchronize(impl_->staged));
  char* st = static_cast<char*>(impl_->staging);
  size_t off = 0;
  auto take = [&](size_t bytes) {
    off = (off + 15) & ~size_t(15);
    const size_t at = off;
    off += bytes;
    return at;
  };
  const size_t o_exp = take(nG * sizeof(MxExpert));
  const size_t o_beg = take((nG + 1) * sizeof(int));
  const size_t o_list = take(nA_assign * sizeof(int));
  const size_t o_sg = take(nA_assign * sizeof(int));
  const size_t o_w = take(nA_assign * sizeof(float));
  if (off > impl_->staging_bytes) throw CudaError("ExpertMlp::run: internal table overflow");
  std::memcpy(st + o_exp, experts.data(), nG * sizeof(MxExpert));
  int* beg = reinterpret_cast<int*>(st + o_beg);
  int* list = reinterpret_cast<int*>(st + o_list);
  std::memset(beg, 0, (nG + 1) * sizeof(int));
  for (int a = 0; a < nA_assign; ++a) ++beg[slot_expert[a] + 1];
  for (int g = 0; g < nG; ++g) beg[g + 1] += beg[g];
  {
    std::vector<int> fill(beg, beg + nG);
    for (int a = 0; a < nA_assign; ++a) list[fill[slot_expert[a]]++] = a;
  }
  std::memcpy(st + o_sg, slot_expert, nA_assign * sizeof(int));
  std::memcpy(st + o_w, slot_weight, nA_assign * sizeof(float));
  for (int g = 0; g < nG; ++g)
    if (beg[g + 1] == beg[g])
      throw CudaError("ExpertMlp::run: expert " + std::to_string(g) + " is passed but no slot uses it");

  const cudaStream_t s = as_stream(stream);
  char* dt = impl_->tables.as<char>();
  DELTAFIN_CUDA_CHECK(cudaMemcpyAsync(dt, st, off, cudaMemcpyHostToDevice, s));
  DELTAFIN_CUDA_CHECK(cudaEventRecord(impl_->staged, s));
  DELTAFIN_CUDA_CHECK(cudaMemsetAsync(impl_->counters.data(), 0, (1 + 2 * static_cast<size_t>(nG)) * sizeof(unsigned), s));

  Params P{};
  P.experts = reinterpret_cast<const MxExpert*>(dt + o_exp);
  P.grp_begin = reinterpret_cast<const int*>(dt + o_beg);
  P.assign_list = reinterpret_cast<const int*>(dt + o_list);
  P.slot_group = reinterpret_cast<const int*>(dt + o_sg);
  P.slot_weight = reinterpret_cast<const float*>(dt + o_w);
  P.z = dev_z;
  P.y = dev_y;
  P.h = impl_->h.as<float>();
  P.d = impl_->d.as<float>();
  unsigned* ctr = impl_->counters.as<unsigned>();
  P.ticket = ctr;
  P.doneA = ctr + 1;
  P.doneB = ctr + 1 + nG;
  P.nG = nG;
  P.T = T;
  P.K = K;
  P.latent = latent_;
  P.inter = inter_;
  P.a_tiles = (inter_ + kTileA - 1) / kTileA;
  P.b_tiles = (latent_ + kTileB - 1) / kTileB;
  P.c_tiles = (latent_ + kTileC - 1) / kTileC;
  P.nA = static_cast<unsigned>(nG * P.a_tiles);
  P.nB = static_cast<unsigned>(nG * P.b_tiles);
  P.nC = static_cast<unsigned>(T * P.c_tiles);

  const Variant& v = kVariants[impl_->variant];
  if (!impl_->blocks_per_sm) {
    DELTAFIN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&impl_->blocks_per_sm, v.fn, kThreads, 0));
    if (impl_->blocks_per_sm < 1) impl_->blocks_per_sm = 1;
  }
  const unsigned total = P.nA + P.nB + P.nC;
  const unsigned cap = static_cast<unsigned>(impl_->sms * impl_->blocks_per_sm);
  v.fn<<<std::min(total, cap), kThreads, 0, s>>>(P);
  DELTAFIN_CUDA_LAUNCHED("expert_mlp_kernel");
}

}  // namespace deltafin::cuda
