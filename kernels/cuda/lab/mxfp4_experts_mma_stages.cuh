// Tensor-core versions v16-v22 (mma.sync, fp16 operands, fp32 accumulators): weights streamed
// through shared-memory stages (bulk copies or cp.async) and read by ldmatrix. Their arithmetic is
// mxfp4_experts_mma.cuh's (the product's fragment-order versions compute the same bits without the
// stages). Included by lab/expert_kernels_lab.cu inside its anonymous namespace, after mxfp4_experts_mma.cuh.
//
// Data flow per warp: 32 weight rows (gate and up rows o..o+15 of an A task, or down rows o..o+31
// of a B task) stream through a two-stage shared-memory ring, 512 columns per stage, either by bulk
// copies (cp.async.bulk, one per row and lane, completing on an mbarrier) or by cp.async (16 bytes
// per lane and instruction); ldmatrix.x4 then hands each lane exactly the 32-bit code word the mma
// fragment layout asks for. The activation fragments for the whole K are staged once per (task,
// pair of assignments) for the block, in lane order (one 16-byte load per lane and 32-column
// block, conflict-free).

namespace mma16 {

// Bulk copies and mbarrier transactions exist from sm_90 on. The library is also built for sm_86 and
// sm_89, where these versions never run (fits() needs compute capability 9): there the helpers trap.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define DELTAFIN_SM90_ASM(...) __trap()
#else
#define DELTAFIN_SM90_ASM(...) asm volatile(__VA_ARGS__)
#endif
// cp.async exists from sm_80 on; an explicit older target (e.g. a cached sm_75 build) still compiles.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define DELTAFIN_SM80_ASM(...) __trap()
#else
#define DELTAFIN_SM80_ASM(...) asm volatile(__VA_ARGS__)
#endif

// The end of a pass over a warp's 32 rows for one pair of assignments: the lanes of a quad hold
// mma columns 2q, 2q+1 (slot 0 = columns 0, 1, 2: quads 0 and 1; slot 1 = 3, 4, 5: quads 1 and 2);
// the three parts are added in one fixed order, the staging scale undone, and the rows stored
// (gate/up: h = SiTU(tile 0, tile 1) of rows o0..o0+15; down: d of rows o0..o0+31).
template <bool kGateUp>
__device__ __forceinline__ void finish_pair(const Params& P, const float (&acc)[2][4], const float (&back)[2], int aA,
                                            int aB, int o0, int lane) {
  const int q = lane & 3, gr = lane >> 2;
  float v[2][2];  // [tile][row half]
#pragma unroll
  for (int t = 0; t < 2; ++t) slot_sums(acc[t], q, v[t]);
  const int a = q == 0 ? aA : aB;
  if (q < 2 && a >= 0) {
    const float bs = q ? back[1] : back[0];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int row = o0 + gr + 8 * hr;
      if constexpr (kGateUp) {
        P.h[static_cast<int64_t>(a) * P.inter + row] = situ_act(v[0][hr] * bs, v[1][hr] * bs);
      } else {
        P.d[static_cast<int64_t>(a) * P.latent + row] = v[0][hr] * bs;
        P.d[static_cast<int64_t>(a) * P.latent + row + 16] = v[1][hr] * bs;
      }
    }
  }
}

// Stage geometry: C weight columns per stage, S stages per warp, L lanes of stored B fragments per
// 32-column block (32: all eight columns; 24: columns 0-5, the readers use zeros for 6 and 7).
template <int C, int S, int L>
struct Geo {
  static constexpr int kChunkCols = C;                 // weight columns per stage
  static constexpr int kChunkBytes = C / 2;            // packed bytes per row and stage
  static constexpr int kRowStride = kChunkBytes + 16;  // padded: ldmatrix rows hit distinct banks
  static constexpr int kRows = 32;                     // weight rows per warp: two 16-row tiles
  static constexpr int kScaleBytes = C / 32;           // E8M0 scales per row and stage
  static constexpr int kScaleOff = kRows * kRowStride;
  static constexpr int kStageBytes = kScaleOff + kRows * kScaleBytes;
  static constexpr int kStages = S;
  static constexpr int kFragLanes = L;
  static constexpr int kFragBytes = L * 16;                      // B fragments per 32-column block
  static constexpr int kFloatScaleBytes = kRows * (C / 32) * 4;  // per warp: one stage's scales as floats
};
// v16-v21: 512-column stages, two per warp (221 KB per block: one block per SM).
using Big = Geo<512, 2, 32>;
// v22: 128-column stages, three per warp, compact fragments (about 108 KB: two blocks per SM).
using Small = Geo<128, 3, 24>;

constexpr int kHeader = 256;         // mbarriers (128 B), then reduction scratch (64 B)
constexpr int kTileA = kWarps * 16;  // intermediate rows per A task
constexpr int kTileB = kWarps * 32;  // latent rows per B task

template <class G>
inline size_t smem_bytes(int latent, int inter, bool float_scales) {
  return kHeader + static_cast<size_t>(kWarps) * G::kStages * G::kStageBytes +
         (float_scales ? static_cast<size_t>(kWarps) * G::kFloatScaleBytes : 0) +
         static_cast<size_t>(std::max(latent, inter) / 32) * G::kFragBytes;
}

template <class G>
inline bool fits(int latent, int inter, bool float_scales) {
  return latent % G::kChunkCols == 0 && inter % G::kChunkCols == 0 && latent % kTileB == 0 && inter % kTileA == 0 &&
         smem_bytes<G>(latent, inter, float_scales) <= 227 * 1024;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count = 1) {
  DELTAFIN_SM90_ASM("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  DELTAFIN_SM90_ASM("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok = 0;
  DELTAFIN_SM90_ASM(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}

// The copies were issued by this warp and complete on their own; the bound only turns a logic error
// into a launch failure instead of a hung GPU.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  for (long long spins = 0; !mbar_try_wait(bar, parity); ++spins)
    if (spins > (1ll << 26)) __trap();
}

__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  DELTAFIN_SM90_ASM(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
      "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar)
      : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

struct Pipe {
  uint32_t stages;  // shared address of this warp's stage 0
  uint32_t bars;    // shared address of this warp's mbarrier 0
  uint32_t issued;  // stages filled so far by this warp (stage = n % kStages, phase = n / kStages)
  uint32_t used;
};

// The 32 weight rows a warp streams for one A or B task: tile 0 and tile 1 (16 rows each).
struct Rows {
  const char* pk[2];
  const uint8_t* sc[2];
  int row_bytes, srow_bytes, nchunks, o0;
  bool valid;  // false for combine tasks and ids past the end
};

template <int kChunkCols = 512>
__device__ __forceinline__ Rows task_rows(const Params& P, unsigned task, int warp) {
  Rows r{};
  if (task < P.nA) {
    const int g = static_cast<int>(task) / P.a_tiles, tile = static_cast<int>(task) % P.a_tiles;
    const MxExpert e = P.experts[g];
    r.row_bytes = P.latent / 2;
    r.srow_bytes = P.latent / 32;
    r.nchunks = P.latent / kChunkCols;
    r.o0 = tile * kTileA + warp * 16;
    r.pk[0] = static_cast<const char*>(e.gate_packed) + static_cast<int64_t>(r.o0) * r.row_bytes;
    r.pk[1] = static_cast<const char*>(e.up_packed) + static_cast<int64_t>(r.o0) * r.row_bytes;
    r.sc[0] = static_cast<const uint8_t*>(e.gate_scale) + static_cast<int64_t>(r.o0) * r.srow_bytes;
    r.sc[1] = static_cast<const uint8_t*>(e.up_scale) + static_cast<int64_t>(r.o0) * r.srow_bytes;
    r.valid = true;
  } else if (task < P.nA + P.nB) {
    const int b = static_cast<int>(task - P.nA);
    const int g = b / P.b_tiles, tile = b % P.b_tiles;
    const MxExpert e = P.experts[g];
    r.row_bytes = P.inter / 2;
    r.srow_bytes = P.inter / 32;
    r.nchunks = P.inter / kChunkCols;
    r.o0 = tile * kTileB + warp * 32;
    r.pk[0] = static_cast<const char*>(e.down_packed) + static_cast<int64_t>(r.o0) * r.row_bytes;
    r.pk[1] = r.pk[0] + static_cast<int64_t>(16) * r.row_bytes;
    r.sc[0] = static_cast<const uint8_t*>(e.down_scale) + static_cast<int64_t>(r.o0) * r.srow_bytes;
    r.sc[1] = r.sc[0] + 16 * r.srow_bytes;
    r.valid = true;
  }
  return r;
}

// Lane l's row (tile l / 16, row l % 16) of `chunk`: packed bytes and scales.
template <class G>
__device__ __forceinline__ const char* lane_row(const Rows& rw, int chunk, int lane) {
  return (lane >> 4 ? rw.pk[1] : rw.pk[0]) + static_cast<int64_t>(lane & 15) * rw.row_bytes + chunk * G::kChunkBytes;
}
template <class G>
__device__ __forceinline__ const uint8_t* lane_scales(const Rows& rw, int chunk, int lane) {
  return (lane >> 4 ? rw.sc[1] : rw.sc[0]) + static_cast<int64_t>(lane & 15) * rw.srow_bytes + chunk * G::kScaleBytes;
}

// Stage `chunk` (512 columns) of the warp's 32 rows: lane l copies row l.
template <class G>
__device__ __forceinline__ void issue(Pipe& p, const Rows& rw, int chunk, int lane) {
  const uint32_t s = p.issued % G::kStages;
  const uint32_t st = p.stages + s * G::kStageBytes, bar = p.bars + s * 8;
  if (lane == 0) mbar_expect_tx(bar, G::kRows * (G::kChunkBytes + G::kScaleBytes));
  __syncwarp();
  bulk_copy(st + lane * G::kRowStride, lane_row<G>(rw, chunk, lane), G::kChunkBytes, bar);
  bulk_copy(st + G::kScaleOff + lane * G::kScaleBytes, lane_scales<G>(rw, chunk, lane), G::kScaleBytes, bar);
  ++p.issued;
}

// The same stage through cp.async (16 bytes per lane and instruction, L2 only): 17 instructions per
// lane and stage instead of two bulk copies, for when many small bulk copies queue in the copy engine.
// Lanes 0-15 copy one row's 256 bytes and lanes 16-31 the next row's, 16 rows per instruction pair.
__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
  DELTAFIN_SM80_ASM("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(__cvta_generic_to_global(src))
                    : "memory");
}

// 4-byte copies (a row's scales in 128-column stages) go through L1 (cp.async.cg takes 16 only).
__device__ __forceinline__ void cp4(uint32_t dst, const void* src) {
  DELTAFIN_SM80_ASM("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(__cvta_generic_to_global(src))
                    : "memory");
}

template <class G>
__device__ __forceinline__ void issue_cp(Pipe& p, const Rows& rw, int chunk, int lane) {
  const uint32_t st = p.stages + (p.issued % G::kStages) * G::kStageBytes;
  constexpr int kLanesPerRow = G::kChunkBytes / 16, kRowsPerOp = 32 / kLanesPerRow;
  const int sub = lane / kLanesPerRow, col = (lane % kLanesPerRow) * 16;
#pragma unroll
  for (int i = 0; i < G::kRows / kRowsPerOp; ++i) {
    const int row = kRowsPerOp * i + sub;  // tile row / 16 is compile-time: kRowsPerOp divides 16
    const char* src = (kRowsPerOp * i < 16 ? rw.pk[0] : rw.pk[1]) + static_cast<int64_t>(row & 15) * rw.row_bytes +
                      chunk * G::kChunkBytes + col;
    cp16(st + row * G::kRowStride + col, src);
  }
  if constexpr (G::kScaleBytes == 16) cp16(st + G::kScaleOff + lane * 16, lane_scales<G>(rw, chunk, lane));
  else cp4(st + G::kScaleOff + lane * 4, lane_scales<G>(rw, chunk, lane));
  DELTAFIN_SM80_ASM("cp.async.commit_group;" ::: "memory");
  ++p.issued;
}

// Waits for the oldest outstanding stage of this warp (cp.async path), then makes every lane's
// copies visible to the whole warp.
__device__ __forceinline__ void wait_cp(const Pipe& p) {
  const uint32_t later = p.issued - p.used - 1;  // stages issued after the one needed now
  if (later >= 2) DELTAFIN_SM80_ASM("cp.async.wait_group 2;" ::: "memory");
  else if (later == 1) DELTAFIN_SM80_ASM("cp.async.wait_group 1;" ::: "memory");
  else DELTAFIN_SM80_ASM("cp.async.wait_group 0;" ::: "memory");
  __syncwarp();
}

// kFS: the warp first turns the stage's 512 scale bytes into floats (each once, instead of once
// per lane quad) laid out [tile][block][row g][g / g+8], so a lane reads its two with one 8-byte load.
// frag: this stage's first block; lanes past G::kFragLanes use zero fragments.
template <class G, bool kFS>
__device__ __forceinline__ void compute_stage(uint32_t st, const char* stage_generic, const uint4* frag, float* fs,
                                              int lane, float (&acc)[2][4]) {
  static_assert(!kFS || G::kChunkCols == 512, "float scale buffers are laid out for 512-column stages");
  constexpr int L = G::kFragLanes;
  const int g = lane >> 2;
  const uint32_t lm = st + (lane & 15) * G::kRowStride + (lane >> 4) * 16;
  const uint8_t* scl = reinterpret_cast<const uint8_t*>(stage_generic + G::kScaleOff);
  if constexpr (kFS) {
    const uint4 sb = *reinterpret_cast<const uint4*>(scl + lane * G::kScaleBytes);
    const uint32_t wds[4] = {sb.x, sb.y, sb.z, sb.w};
    float* dst = fs + (lane >> 4) * 256 + (lane & 7) * 2 + ((lane >> 3) & 1);
#pragma unroll
    for (int j = 0; j < 16; ++j) dst[j * 16] = e8m0_max((wds[j / 4] >> (8 * (j % 4))) & 0xFFu);
    __syncwarp();
  }
#pragma unroll
  for (int bp = 0; bp < G::kChunkCols / 64; ++bp) {
    uint4 f[2] = {make_uint4(0u, 0u, 0u, 0u), make_uint4(0u, 0u, 0u, 0u)};
    if (L == 32 || lane < L) {
      f[0] = frag[(2 * bp) * L + lane];
      f[1] = frag[(2 * bp + 1) * L + lane];
    }
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      uint32_t w[4];  // row g / g+8 of block 2bp, then of block 2bp+1
      ldsm_x4(lm + t * 16 * G::kRowStride + bp * 32, w);
#pragma unroll
      for (int hb = 0; hb < 2; ++hb) {
        uint32_t ra[4], rb[4];
        e2m1_half2(w[2 * hb], ra);
        e2m1_half2(w[2 * hb + 1], rb);
        const int blk = 2 * bp + hb;
        float s0, s1;
        if constexpr (kFS) {
          const float2 sp = *reinterpret_cast<const float2*>(fs + t * 256 + blk * 16 + g * 2);
          s0 = sp.x;
          s1 = sp.y;
        } else {
          s0 = e8m0_max(scl[(t * 16 + g) * G::kScaleBytes + blk]);
          s1 = e8m0_max(scl[(t * 16 + g + 8) * G::kScaleBytes + blk]);
        }
        block_fma(ra, rb, f[hb], s0, s1, acc[t]);
      }
    }
  }
}

// Rows of one task for every assignment of its expert, two assignments per pass over the weights.
// kGateUp: A task (gate and up rows o0..o0+15, writes h = SiTU(gate, up)); otherwise B task (down
// rows o0..o0+31, writes d). kFS: float scale buffers; kCp: stages filled by cp.async instead of
// bulk copies.
template <class G, bool kGateUp, bool kFS, bool kCp>
__device__ __forceinline__ void task(const Params& P, unsigned task_id, char* smem, Pipe& pipe) {
  constexpr int kStages = G::kStages, kStageBytes = G::kStageBytes;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* red = reinterpret_cast<float*>(smem + kWarps * kStages * 8);
  char* stages = smem + kHeader;
  float* fs = reinterpret_cast<float*>(stages + kWarps * kStages * kStageBytes) + warp * (G::kFloatScaleBytes / 4);
  char* frag = stages + kWarps * kStages * kStageBytes + (kFS ? kWarps * G::kFloatScaleBytes : 0);
  const Rows rw = task_rows<G::kChunkCols>(P, task_id, warp);
  const int g = kGateUp ? static_cast<int>(task_id) / P.a_tiles : static_cast<int>(task_id - P.nA) / P.b_tiles;
  const int K = kGateUp ? P.latent : P.inter;
  const int nchunks = rw.nchunks;
  const int a0 = P.grp_begin[g], a1 = P.grp_begin[g + 1];
  const int npairs = (a1 - a0 + 1) / 2;
  const int total = npairs * nchunks;
  // Weights do not depend on the activations: start streaming before staging them.
  for (int i = 0; i < kStages && i < total; ++i) {
    if constexpr (kCp) issue_cp<G>(pipe, rw, i % nchunks, lane);
    else issue<G>(pipe, rw, i % nchunks, lane);
  }
  const char* stage0 = stages + warp * kStages * kStageBytes;
  for (int pr = 0; pr < npairs; ++pr) {
    const auto [aA, aB, xA, xB] = pair_vectors<kGateUp>(P, a0, a1, pr);
    __syncthreads();  // every warp is done with the previous fragments
    float back[2];
    stage_frags<!kGateUp, G::kFragLanes>(frag, red, xA, xB, K, back);  // h was written by this launch: L2 only
    float acc[2][4];
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
#pragma unroll 1
    for (int c = 0; c < nchunks; ++c) {
      const uint32_t s = pipe.used % kStages;
      if constexpr (kCp) wait_cp(pipe);
      else mbar_wait(pipe.bars + s * 8, (pipe.used / kStages) & 1);
      compute_stage<G, kFS>(
          pipe.stages + s * kStageBytes, stage0 + s * kStageBytes,
          reinterpret_cast<const uint4*>(frag + static_cast<size_t>(c) * (G::kChunkCols / 32) * G::kFragBytes), fs,
          lane, acc);
      __syncwarp();  // every lane's ldmatrix of this stage is done before it is refilled
      ++pipe.used;
      const int n = pr * nchunks + c;
      if (n + kStages < total) {
        if constexpr (kCp) issue_cp<G>(pipe, rw, (n + kStages) % nchunks, lane);
        else issue<G>(pipe, rw, (n + kStages) % nchunks, lane);
      }
    }
    finish_pair<kGateUp>(P, acc, back, aA, aB, rw.o0, lane);
  }
}

}  // namespace mma16

// The tensor-core versions: same tickets and tasks as expert_mlp_kernel, kMinBlocks blocks per SM
// (what the geometry's shared memory allows).
template <class G, bool kFS, bool kCp, int kMinBlocks = 1>
__global__ void __launch_bounds__(kThreads, kMinBlocks) expert_mlp_mma_kernel(const Params P) {
  pdl_enter();
  extern __shared__ __align__(128) char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  mma16::Pipe pipe{mma16::smem_u32(smem + mma16::kHeader + warp * G::kStages * G::kStageBytes),
                   mma16::smem_u32(smem + warp * G::kStages * 8), 0u, 0u};
  if (!kCp && lane == 0) {
    for (int s = 0; s < G::kStages; ++s) mma16::mbar_init(pipe.bars + 8 * s);
    DELTAFIN_SM90_ASM("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  run_tickets(
      P, [&](unsigned task, int, int) { mma16::task<G, true, kFS, kCp>(P, task, smem, pipe); },
      [&](unsigned task, int, int) { mma16::task<G, false, kFS, kCp>(P, task, smem, pipe); });
}
