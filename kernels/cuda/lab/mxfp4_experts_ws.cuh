// Warp-specialised integer tensor-core versions of the routed-expert MLP. Included by
// lab/expert_kernels_lab.cu inside its anonymous namespace, after mxfp4_experts_imma.cuh (whose decode, mma
// and activation digits these versions use) and mxfp4_experts_mma.cuh (mbarrier and bulk-copy
// helpers).
//
// Why: the ticket versions hand out one task per ticket. Each
// task drains its own loads before the next one starts, and the tasks (~200 KB) are so large that
// at T=1 the last ones run alone on a few SMs: a load-only build of that scheme streamed only 67%
// of the copy bandwidth at T=1. Here one producer warp per block streams whole tasks into a ring of
// shared-memory stages with bulk copies (one per weight row) and runs ahead across task boundaries,
// while 8 or 16 consumer warps compute from shared memory. Tasks are small (16 gate/up rows or 32
// down rows, 52-61 KB), and each block takes one contiguous chunk of the gate/up tasks and one of
// the down tasks, cut so that every chunk costs about the same (weight bytes plus a share per
// activation vector). So the blocks finish together instead of leaving a tail of large tasks.
//
// Measured on the H200: the streaming is even, but these versions are slower than the ticket
// versions (v55 45% of the copy bandwidth at T=1, v51 37-39% at T=1 and T=8; v9 54% / 60%): with
// one block per SM the consumers cannot issue the imma arithmetic (about 200 warp instructions per
// KB of weights) fast enough. Kept, like every measured version, for the checker and the benchmark.
//
// Tickets and deadlock freedom: a block's producer takes tickets for chunks in order (gate/up
// chunks, then down chunks, then combine tasks), so a task only ever waits for tasks with lower
// tickets, which running blocks hold and finish without waiting on anything later. The producer
// itself waits only for ring stages its own consumers release.
//
// Arithmetic and reduction order (Variant::order 3 for NQ = 4 column splits, 4 for NQ = 8): the
// same exact block integers as the imma versions (imma::block_step), but a row's 32-column blocks
// are split into NQ ranges by NQ warps: each lane sums its blocks of a range in order, the four
// lanes of a row meet in the fixed butterfly (imma::class_sum), and the ranges are added in order. Nothing depends on
// the other rows or assignments in the batch, so every row is bit-identical alone or in a batch.
namespace ws {

// Shapes of one version: RS sets of 8 weight rows per task (gate/up tasks: RS / 2 sets of gate and
// of up rows, i.e. 4 RS intermediate rows; down tasks: 8 RS latent rows), NQ column splits, NR row
// sets per consumer warp. Each of the (RS / NR) NQ consumer warps takes NR row sets and one split;
// one more warp produces and one finishes the rows (adds the splits, applies the activation,
// stores, counts tasks done).
// Threads of a version's block (the host's launch uses this too).
__host__ __device__ constexpr int threads(int rs, int nq, int nr) { return (rs / nr) * nq * 32 + 64; }

template <int RS, int NQ, int NR = RS / 2>
struct Shape {
  static constexpr int kGroups = RS / NR;  // row-set groups
  static constexpr int kConsumerWarps = kGroups * NQ;
  static constexpr int kConsumers = kConsumerWarps * 32;  // threads 0 .. kConsumers - 1
  static constexpr int kThreads = threads(RS, NQ, NR);    // then the producer and the finishing warp
  static_assert(kThreads == kConsumers + 64);
  static constexpr int kRowsPerWarp = NR;  // row sets
  static constexpr int kTileA = 4 * RS;
  static constexpr int kTileB = 8 * RS;
};
constexpr int kRowPad = 64;  // bytes after each staged row: rows alternate bank halves (rows are 0 mod 128 bytes)

enum Kind : int { kTaskA = 0, kTaskB = 1, kTaskC = 2, kEnd = 3 };
// A staged task as the producer describes it. The group's assignment range and first ids travel
// with it: under a saturated memory system every dependent global load costs a microsecond or
// more, so the consumers read nothing but weights and activations from global memory per task.
struct Desc {
  int kind, g, tile, a0, a1;
  int id[4];  // assign_list[a0 ..], as far as the group has them
  int pad[3];
};
constexpr int kSums = 2;                       // split-sum buffers between the consumers and the finishing warp
constexpr long long kFlushAfterCycles = 4000;  // ~2 us: the finishing warp publishes its counts after waiting this long
// What the finishing warp needs of one pass, besides its split sums.
struct PassHdr {
  int kind, g, tile, na, last;
  int a[4];  // the pass's assignments
  int k[4];  // their vectors' scales 2^k
};

__host__ __device__ inline int row_pitch(int width) { return width / 2 + kRowPad; }
__host__ __device__ inline size_t scales_offset(int latent, int inter, int rs) {
  return static_cast<size_t>(rs * 8) * row_pitch(latent > inter ? latent : inter);
}
__host__ __device__ inline size_t stage_bytes(int latent, int inter, int rs) {
  const int w = latent > inter ? latent : inter;
  return (scales_offset(latent, inter, rs) + static_cast<size_t>(rs * 8) * (w / 32) + 127) & ~size_t(127);
}
// [digit planes (imma layout)][S stages][full mbarriers][empty mbarriers][stage descriptors]
// [kSums x split sums][their full / empty mbarriers][their pass headers][warp maxima for the staging]
struct Layout {
  size_t ring, full, empty, desc, red, red_full, red_empty, hdr, wmax, end;
};
__host__ __device__ inline Layout layout(int latent, int inter, int na, int stages, int rs, int nq) {
  Layout L{};
  L.ring = (imma::digits_bytes(latent, inter, na) + 127) & ~size_t(127);
  L.full = L.ring + static_cast<size_t>(stages) * stage_bytes(latent, inter, rs);
  L.empty = L.full + 8 * static_cast<size_t>(stages);
  L.desc = L.empty + 8 * static_cast<size_t>(stages);
  L.red = L.desc + sizeof(Desc) * static_cast<size_t>(stages);
  L.red_full = L.red + kSums * sizeof(float) * static_cast<size_t>(nq * rs * 8 * na);
  L.red_empty = L.red_full + 8 * kSums;
  L.hdr = L.red_empty + 8 * kSums;
  L.wmax = L.hdr + sizeof(PassHdr) * kSums;
  L.end = L.wmax + sizeof(float) * 32;  // one per consumer warp (at most 32)
  return L;
}
inline size_t smem_bytes(int latent, int inter, int na, int stages, int rs, int nq) {
  return layout(latent, inter, na, stages, rs, nq).end;
}
inline bool fits(int latent, int inter, int rs) {
  return latent % 128 == 0 && inter % 128 == 0 && inter % (4 * rs) == 0 && latent % (8 * rs) == 0;
}

// try_wait that lets the hardware suspend the warp until the phase completes (or `ns` pass):
// a plain try_wait returns at once, and the spinning warps (the producer runs ahead, the finishing
// warp and the consumers wait) then take issue slots from the consumers' arithmetic.
__device__ __forceinline__ bool mbar_try_wait_sleep(uint32_t bar, uint32_t parity, uint32_t ns) {
  uint32_t ok = 0;
  DELTAFIN_SM90_ASM(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok)
      : "r"(bar), "r"(parity), "r"(ns)
      : "memory");
  return ok != 0;
}
// The bound only turns a logic error into a launch failure instead of a hung GPU.
__device__ __forceinline__ void mbar_wait_sleep(uint32_t bar, uint32_t parity) {
  for (long long spins = 0; !mbar_try_wait_sleep(bar, parity, 100000u); ++spins)
    if (spins > (1ll << 22)) __trap();
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  DELTAFIN_SM90_ASM("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Bulk copy marked evict-first in L2: each weight byte is read once per launch.
__device__ __forceinline__ void bulk_copy_stream(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar,
                                                 uint64_t policy) {
  DELTAFIN_SM90_ASM(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::
          "r"(dst),
      "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar), "l"(policy)
      : "memory");
}
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t p = 0;
  DELTAFIN_SM90_ASM("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// The consumer warps' barrier (the producer warp never joins it).
template <int N>
struct ConsumerSync {
  static constexpr int kCount = N;
  __device__ __forceinline__ void operator()() const { asm volatile("bar.sync 1, %0;" ::"n"(N) : "memory"); }
};

// Cost of a task of group g in chunk cutting: its weight bytes count as kMemCost vectors' compute.
constexpr int64_t kMemCost = 4;
__device__ __forceinline__ int64_t task_cost(const Params& P, int g) {
  const int na = P.grp_begin[g + 1] - P.grp_begin[g];
  return na > 0 ? kMemCost + na : 0;  // groups no slot uses (run_routed) have no tasks
}

// First task of chunk c of `chunks` over the groups' `tiles` tasks each: the first task whose
// preceding cost reaches c / chunks of the total.
__device__ int chunk_start(const Params& P, int tiles, int c, int chunks, int64_t total) {
  const int64_t target = static_cast<int64_t>(c) * total;  // compare cost_before * chunks >= target
  int64_t cum = 0;
  for (int g = 0; g < P.nG; ++g) {
    const int64_t w = task_cost(P, g);
    const int64_t cg = w * tiles;
    if (cg > 0 && (cum + cg) * chunks >= target) {
      const int64_t need = target - cum * chunks;  // > 0 unless c == 0 or at a group boundary
      const int64_t t = need <= 0 ? 0 : (need + w * chunks - 1) / (w * chunks);
      return g * tiles + static_cast<int>(t < tiles ? t : tiles);
    }
    cum += cg;
  }
  return P.nG * tiles;
}

// The producer warp: takes chunk tickets, and for each task of a chunk waits for a free stage,
// describes the task and copies its rows (one bulk copy per row and lane) and scales into it.
template <int S, int RS>
__device__ void produce(const Params& P, uint8_t* smem, const Layout& L) {
  constexpr int kRows = RS * 8, kHalf = kRows / 2;
  const int lane = threadIdx.x & 31;
  const uint32_t ring = mma16::smem_u32(smem + L.ring);
  const uint32_t full = mma16::smem_u32(smem + L.full);
  const uint32_t empty = mma16::smem_u32(smem + L.empty);
  Desc* desc = reinterpret_cast<Desc*>(smem + L.desc);
  const size_t sbytes = stage_bytes(P.latent, P.inter, RS), soff = scales_offset(P.latent, P.inter, RS);
  const uint64_t policy = evict_first_policy();
  // One chunk of each phase per block.
  const int G = static_cast<int>(gridDim.x);
  unsigned n = 0;  // tasks emitted
  int cur_g = -1, a0 = 0, a1 = 0, ids[4] = {0, 0, 0, 0};
  MxExpert e{};
  auto emit = [&](int kind, int g, int tile) {
    if (kind <= kTaskB && g != cur_g) {  // read once per run of tasks of one group
      cur_g = g;
      e = P.experts[g];
      a0 = P.grp_begin[g];
      a1 = P.grp_begin[g + 1];
#pragma unroll
      for (int i = 0; i < 4; ++i) ids[i] = a0 + i < a1 ? P.assign_list[a0 + i] : 0;
    }
    const int s = static_cast<int>(n % S);
    mbar_wait_sleep(empty + 8 * s, ((n / S) & 1u) ^ 1u);
    const uint32_t st = ring + static_cast<uint32_t>(s * sbytes);
    const uint32_t bar = full + 8 * s;
    const int width = kind == kTaskA ? P.latent : P.inter;
    const int rb = width / 2, nb = width / 32;
    const uint32_t bytes = kind <= kTaskB ? static_cast<uint32_t>(kRows * (rb + nb)) : 0u;
    if (lane == 0) {
      desc[s] = Desc{kind, g, tile, a0, a1, {ids[0], ids[1], ids[2], ids[3]}, {}};
      if (bytes) mma16::mbar_expect_tx(bar, bytes);
      else mbar_arrive(bar);
    }
    __syncwarp();
    if (kind == kTaskA) {  // rows 0 .. kHalf - 1: gate, kHalf .. kRows - 1: up, same intermediate rows
      for (int r = lane; r < kRows; r += 32) {
        const int half = r / kHalf, o = tile * kHalf + r % kHalf;
        const uint8_t* w =
            static_cast<const uint8_t*>(half ? e.up_packed : e.gate_packed) + static_cast<int64_t>(o) * rb;
        bulk_copy_stream(st + r * row_pitch(width), w, rb, bar, policy);
      }
      if (lane < 2) {
        const uint8_t* sc =
            static_cast<const uint8_t*>(lane ? e.up_scale : e.gate_scale) + static_cast<int64_t>(tile) * kHalf * nb;
        bulk_copy_stream(st + static_cast<uint32_t>(soff) + lane * kHalf * nb, sc, kHalf * nb, bar, policy);
      }
    } else if (kind == kTaskB) {
      for (int r = lane; r < kRows; r += 32)
        bulk_copy_stream(st + r * row_pitch(width),
                         static_cast<const uint8_t*>(e.down_packed) + static_cast<int64_t>(tile * kRows + r) * rb, rb,
                         bar, policy);
      if (lane == 0)
        bulk_copy_stream(st + static_cast<uint32_t>(soff),
                         static_cast<const uint8_t*>(e.down_scale) + static_cast<int64_t>(tile) * kRows * nb,
                         kRows * nb, bar, policy);
    }
    ++n;
  };
  // Chunk costs: the same totals for every block (the tables are the launch's).
  int64_t wa = 0;
  for (int g = 0; g < P.nG; ++g) wa += task_cost(P, g);
  const int64_t total_a = wa * P.a_tiles, total_b = wa * P.b_tiles;
  for (;;) {
    unsigned t = 0;
    if (lane == 0) t = take_ticket(P);
    t = __shfl_sync(0xffffffffu, t, 0);
    if (t < static_cast<unsigned>(2 * G)) {
      const bool a = t < static_cast<unsigned>(G);
      const int c = static_cast<int>(a ? t : t - G), tiles = a ? P.a_tiles : P.b_tiles;
      const int64_t total = a ? total_a : total_b;
      const int i0 = chunk_start(P, tiles, c, G, total), i1 = chunk_start(P, tiles, c + 1, G, total);
      for (int i = i0; i < i1; ++i) emit(a ? kTaskA : kTaskB, i / tiles, i % tiles);
    } else if (t < static_cast<unsigned>(2 * G) + P.nC) {
      const int c = static_cast<int>(t - 2 * G);
      emit(kTaskC, c / P.c_tiles, c % P.c_tiles);
    } else {
      emit(kEnd, 0, 0);
      return;
    }
  }
}

// NR row sets from rs0 of the stage (8 rows each; lane (g, q) at row 8 rs + g, blocks 4j + q) over
// blocks j0 <= j < j1 of 4, against the staged vectors: acc[r][i] += this lane's blocks.
template <int NR, int NA>
__device__ __forceinline__ void split_pass(uint32_t st, size_t soff, int pitch, int nblk, int rs0, int j0, int j1,
                                           const imma::BSource& bs, int na, float (&acc)[NR][NA]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  imma::RowSums rsum[NR][NA] = {};
  const uint32_t lut_lo = imma::lut_register();
  uint32_t wa[NR], sa[NR];
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    const int row = (rs0 + r) * 8 + g;
    wa[r] = st + row * pitch + q * 16;
    sa[r] = st + static_cast<uint32_t>(soff) + row * nblk + q;
  }
  auto load = [&](int j, uint4(&w)[NR], uint32_t(&sc)[NR]) {  // block step j of every row set
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      w[r] = imma::lds128(wa[r] + j * 64);
      sc[r] = imma::lds8(sa[r] + 4 * j);
    }
  };
  uint4 cur[NR];
  uint32_t sc[NR];
  load(j0, cur, sc);
#pragma unroll 2  // two steps per iteration: cur / nxt and the running sums swap by renaming, not moves
  for (int j = j0; j < j1; ++j) {
    uint4 nxt[NR];
    uint32_t sn[NR];
    load(j + 1 < j1 ? j + 1 : j, nxt, sn);
    imma::block_step<NR, NA>(cur, sc, bs.b01 + j * 128, bs, na, lut_lo, rsum, acc);
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      cur[r] = nxt[r];
      sc[r] = sn[r];
    }
  }
}

// The consumer warps: take the stages in order and compute their tasks. Per pass over a task's
// stage (NA vectors), each warp adds its split of its rows and leaves the split sums in a buffer
// for the finishing warp; they never wait for it unless both buffers are still in use.
template <int NA, int S, int RS, int NQ, int NRW>
__device__ void consume(const Params& P, uint8_t* smem, const Layout& L, imma::Staged* staged) {
  using Sh = Shape<RS, NQ, NRW>;
  static_assert(Sh::kConsumerWarps <= 32, "the staging's warp maxima hold 32 warps");
  constexpr int NR = Sh::kRowsPerWarp, kRows = RS * 8;
  static_assert(NA <= 4, "PassHdr holds 4 vector scales");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tid = threadIdx.x;
  const int pair = warp % Sh::kGroups, split = warp / Sh::kGroups;  // row sets pair * NR .., column split
  const uint32_t ring = mma16::smem_u32(smem + L.ring);
  const uint32_t full = mma16::smem_u32(smem + L.full);
  const uint32_t empty = mma16::smem_u32(smem + L.empty);
  const uint32_t red_full = mma16::smem_u32(smem + L.red_full);
  const uint32_t red_empty = mma16::smem_u32(smem + L.red_empty);
  const volatile Desc* desc = reinterpret_cast<const volatile Desc*>(smem + L.desc);
  float* red0 = reinterpret_cast<float*>(smem + L.red);  // kSums x [split][row of the stage][vector]
  PassHdr* hdr = reinterpret_cast<PassHdr*>(smem + L.hdr);
  float* wmax = reinterpret_cast<float*>(smem + L.wmax);
  const size_t sbytes = stage_bytes(P.latent, P.inter, RS), soff = scales_offset(P.latent, P.inter, RS);
  const size_t stride = imma::plane_stride(P.latent, P.inter);
  const imma::BSource bs = imma::b_source<NA>(P, smem);
  const ConsumerSync<Sh::kConsumers> sync;
  unsigned passes = 0;
  int ready_g = -1;  // the last group whose gate/up tasks were seen done
  // Hands one pass to the finishing warp: split sums (if any) and, from warp 0, the header.
  auto hand_over = [&](const PassHdr& h, auto&& write_sums) {
    const int b = static_cast<int>(passes % kSums);
    mbar_wait_sleep(red_empty + 8 * b, ((passes / kSums) & 1u) ^ 1u);
    write_sums(red0 + b * (NQ * kRows * NA));
    if (tid == 0) hdr[b] = h;
    __syncwarp();
    if (lane == 0) mbar_arrive(red_full + 8 * b);
    ++passes;
  };
  for (unsigned n = 0;; ++n) {
    const int s = static_cast<int>(n % S);
    mbar_wait_sleep(full + 8 * s, (n / S) & 1u);
    const int kind = desc[s].kind, g = desc[s].g, tile = desc[s].tile;
    if (kind == kEnd) {
      hand_over(PassHdr{kEnd, 0, 0, 0, 0, {}, {}}, [](float*) {});
      return;
    }
    if (kind == kTaskC) {
      __syncwarp();
      if (lane == 0) mbar_arrive(empty + 8 * s);
      if (tid == 0) wait_row_experts(P, g);  // g: the row
      sync();
      task_combine<Sh::kConsumers>(P, g, tile);
      continue;
    }
    const bool is_a = kind == kTaskA;
    if (!is_a && g != ready_g) {
      if (tid == 0) wait_expert_a(P, g);
      sync();
      ready_g = g;
    }
    const int width = is_a ? P.latent : P.inter, nblk = width / 32, nj = nblk / 4;
    const int j0 = split * nj / NQ, j1 = (split + 1) * nj / NQ;
    const uint32_t st = ring + static_cast<uint32_t>(s * sbytes);
    const int a0 = desc[s].a0, a1 = desc[s].a1;
    for (int ab = a0; ab < a1; ab += NA) {
      const int na = min(NA, a1 - ab);
      const bool last = ab + NA >= a1;
      int ids[NA];
#pragma unroll
      for (int i = 0; i < NA; ++i)
        ids[i] = i >= na ? 0 : ab + i - a0 < 4 ? desc[s].id[ab + i - a0] : P.assign_list[ab + i];
#pragma unroll
      for (int i = 0; i < NA; ++i) {
        if (i >= na) break;
        const int a = ids[i];
        if (is_a)
          imma::stage_digits<false>(smem + i * 4 * stride, stride, P.z + static_cast<int64_t>(a / P.K) * P.latent,
                                    P.latent, wmax, staged + i, a / P.K, sync);
        else  // h was written by this launch: read through L2 only
          imma::stage_digits<true>(smem + i * 4 * stride, stride, P.h + static_cast<int64_t>(a) * P.inter, P.inter,
                                   wmax, staged + i, -2 - a, sync);
      }
      float acc[NR][NA];
#pragma unroll
      for (int r = 0; r < NR; ++r)
#pragma unroll
        for (int i = 0; i < NA; ++i) acc[r][i] = 0.f;
      split_pass<NR, NA>(st, soff, row_pitch(width), nblk, pair * NR, j0, j1, bs, na, acc);
      if (last) {  // this warp is done with the stage
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + 8 * s);
      }
      float v[NR][NA];
#pragma unroll
      for (int r = 0; r < NR; ++r)
#pragma unroll
        for (int i = 0; i < NA; ++i) v[r][i] = imma::class_sum(acc[r][i]);
      PassHdr h{kind, g, tile, na, last ? 1 : 0, {}, {}};
#pragma unroll
      for (int i = 0; i < NA; ++i) {
        h.a[i] = ids[i];
        h.k[i] = i < na ? staged[i].k : 0;
      }
      hand_over(h, [&](float* red) {
        if ((lane & 3) != 0) return;
#pragma unroll
        for (int r = 0; r < NR; ++r)
#pragma unroll
          for (int i = 0; i < NA; ++i)
            if (i < na) red[(split * kRows + (pair * NR + r) * 8 + (lane >> 2)) * NA + i] = v[r][i];
      });
    }
  }
}

// The finishing warp: per pass, adds the splits in order, applies the activation (gate/up) or
// stores the down rows, and counts finished tasks per group. Counts are published (fence, then one
// atomic) when the group or kind changes and when the warp has waited for the next pass for a
// while (the consumers may be waiting for these very counts): so the fence, which costs
// microseconds under a saturated memory system and made this warp the bottleneck when paid per
// task, is paid once per run of tasks, and no count is held back while anyone could need it.
template <int NA, int RS, int NQ>
__device__ void finish(const Params& P, uint8_t* smem, const Layout& L) {
  constexpr int kRows = RS * 8;
  const int lane = threadIdx.x & 31;
  const uint32_t red_full = mma16::smem_u32(smem + L.red_full);
  const uint32_t red_empty = mma16::smem_u32(smem + L.red_empty);
  const float* red0 = reinterpret_cast<const float*>(smem + L.red);
  const PassHdr* hdr = reinterpret_cast<const PassHdr*>(smem + L.hdr);
  int pend_kind = -1, pend_g = 0;
  unsigned pend = 0;
  auto flush = [&] {
    if (pend) {
      __syncwarp();
      if (lane == 0) {
        __threadfence();  // cumulative: the warp's stores (ordered by __syncwarp) before the count
        atomicAdd((pend_kind == kTaskA ? P.doneA : P.doneB) + pend_g, pend);
      }
    }
    pend = 0;
  };
  for (unsigned p = 0;; ++p) {
    const int b = static_cast<int>(p % kSums);
    const uint32_t parity = (p / kSums) & 1u;
    if (!mma16::mbar_try_wait(red_full + 8 * b, parity)) {
      const long long t0 = clock64();
      for (long long spins = 0; !mbar_try_wait_sleep(red_full + 8 * b, parity, 1000u); ++spins) {
        if (pend && clock64() - t0 > kFlushAfterCycles) flush();
        if (spins > (1ll << 26)) __trap();  // a logic error: fail the launch rather than hang
      }
    }
    const PassHdr h = hdr[b];
    if (h.kind == kEnd) {
      flush();
      return;
    }
    const float* red = red0 + b * (NQ * kRows * NA);
    auto total = [&](int row, int i) {
      float v = red[row * NA + i];
#pragma unroll
      for (int qq = 1; qq < NQ; ++qq) v += red[(qq * kRows + row) * NA + i];
      return v;
    };
    const bool is_a = h.kind == kTaskA;
    const int rows = is_a ? kRows / 2 : kRows;
    for (int t = lane; t < rows * h.na; t += 32) {
      const int r = t % rows, i = t / rows;
      const int kk = h.k[i];
      const int64_t a = h.a[i];
      if (is_a)
        P.h[a * P.inter + h.tile * rows + r] =
            situ_act(ldexpf(total(r, i), -kk - 1), ldexpf(total(rows + r, i), -kk - 1));
      else P.d[a * P.latent + h.tile * rows + r] = ldexpf(total(r, i), -kk - 1);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(red_empty + 8 * b);
    if (h.last) {
      if (h.kind != pend_kind || h.g != pend_g) flush();
      pend_kind = h.kind;
      pend_g = h.g;
      ++pend;
    }
  }
}

}  // namespace ws

// NA: activation vectors per pass over a staged task; S: ring stages; RS, NQ, NR: ws::Shape.
template <int NA, int S, int RS, int NQ, int NR = RS / 2>
__global__ void __launch_bounds__(ws::Shape<RS, NQ, NR>::kThreads, 1) expert_mlp_ws_kernel(const Params P) {
  pdl_enter();
  using Sh = ws::Shape<RS, NQ, NR>;
  extern __shared__ __align__(128) uint8_t wsm[];
  __shared__ imma::Staged staged[NA];
  const ws::Layout L = ws::layout(P.latent, P.inter, NA, S, RS, NQ);
  if (threadIdx.x < NA) staged[threadIdx.x] = imma::Staged{-1, 0};
  {
    const size_t stride = imma::plane_stride(P.latent, P.inter);
    uint32_t* zero = reinterpret_cast<uint32_t*>(wsm + NA * 4 * stride);
    for (size_t i = threadIdx.x; i < stride / 4; i += Sh::kThreads) zero[i] = 0;
  }
  if (threadIdx.x == 0) {
    const uint32_t full = mma16::smem_u32(wsm + L.full);
    const uint32_t empty = mma16::smem_u32(wsm + L.empty);
    for (int s = 0; s < S; ++s) {
      mma16::mbar_init(full + 8 * s, 1);
      mma16::mbar_init(empty + 8 * s, Sh::kConsumerWarps);
    }
    const uint32_t red_full = mma16::smem_u32(wsm + L.red_full);
    const uint32_t red_empty = mma16::smem_u32(wsm + L.red_empty);
    for (int b = 0; b < ws::kSums; ++b) {
      mma16::mbar_init(red_full + 8 * b, Sh::kConsumerWarps);
      mma16::mbar_init(red_empty + 8 * b, 1);
    }
    DELTAFIN_SM90_ASM("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // barriers, zero plane and staging tags are set
  if (threadIdx.x >= Sh::kConsumers + 32) ws::finish<NA, RS, NQ>(P, wsm, L);
  else if (threadIdx.x >= Sh::kConsumers) ws::produce<S, RS>(P, wsm, L);
  else ws::consume<NA, S, RS, NQ, NR>(P, wsm, L, staged);
}
