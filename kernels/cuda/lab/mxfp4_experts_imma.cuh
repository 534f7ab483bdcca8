// Integer tensor-core tasks of the routed-expert MLP (mma.sync.m16n8k32, u8 x s8 -> s32).
// Lab versions (v38, v39, v41 and the warp-specialised ones): included by lab/expert_kernels_lab.cu
// inside its anonymous namespace, after mxfp4_experts_mma.cuh; the task scheme (tickets, A/B/C tasks,
// counters) and Params are expert_tasks.cuh's.
//
// Why: the FFMA versions spend about 5 instructions per weight value (E2M1 -> fp16 -> fp32 decode
// and one FFMA each) and stop near 51-61% of the copy bandwidth; the fp16 tensor-core versions need
// shared-memory staging that leaves one block per SM. Here every weight word goes straight from a
// 16-byte global load into mma operands with two byte permutes per 4 codes, and the tensor cores
// do all multiplications and additions inside a 32-column E8M0 block in exact integer arithmetic.
//
// Exactness:
// - Weights: E2M1 x 2 is an integer in {0, 1, 2, 3, 4, 6, 8, 12} with a sign. prmt looks the
//   magnitude up in an 8-byte table; its sign-replicate mode (selector bit 3 = the code's sign bit)
//   yields 0 for the codes of the other sign. So one permute gives the magnitudes of the positive
//   codes and one (with the sign bits flipped) those of the negative codes: two u8 matrices Wp, Wn
//   with W = (Wp - Wn) / 2, exact.
// - Activations: each fp32 vector x is scaled by the power of two 2^k that brings its largest
//   magnitude under 2^30, rounded to the nearest integer X (the only rounding: every element is
//   kept to 2^-31 of the vector's largest one), and cut into four signed base-256 digits
//   X = d0 + d1 2^8 + d2 2^16 + d3 2^24 (each in [-128, 127]).
// - Per row and block, the mma forms sum(Wp d_p) and sum(Wn d_p) for the four digits in int32
//   (at most 32 x 12 x 128 in magnitude: no overflow), exactly; the block's integer
//   S = sum_p 2^(8p) (Wp - Wn) d_p is formed in int64, exactly, converted to fp32 once and added
//   with its E8M0 scale in one fp32 FMA per row and block; 2^-k is restored at the end (exact).
//   So each block contributes with two roundings, fewer than the FFMA versions' 32.
//
// Layout trick (why one warp-level mma serves four different blocks): lane (g, q) of a warp
// (g = lane / 4, q = lane % 4) loads 16 bytes of row g = the 32 codes of block 4j + q. An mma sums
// over all lanes' k slots, but the four lanes of a row hold four blocks with four scales. So the
// B operand's 8 columns are (block class c = q, digit p) pairs: column 2c + p' holds digit p' (or
// p' + 2 in the second mma) of x where the k slot belongs to lane q == c, and 0 elsewhere. Then
// D column 2q + p' of row g is exactly block (4j + q)'s sum for that digit, and it lands in lane
// (g, q) itself: the lane that loaded the block also scales it, with no data exchange. M rows 0-7
// are Wp of eight weight rows, rows 8-15 the same rows' Wn, so both halves of a row's sum also
// land in one lane.
//
// Exact and batch invariant; with the cp.async ring (v39) faster than the FFMA versions at T=8
// (62-65% of the copy bandwidth against 58-62% on an H200), not at T=1 (46-51% against 53%). Not in
// the product: it would be the row-layout default only at widths (multiples of 128, not K3's, where
// fragment order does not fit) that no model Deltafin runs has.
//
// Batch invariance: an assignment's digits depend on its own vector only; its mma columns are
// computed whatever the other assignments are; the per-block, per-lane and cross-lane (fixed
// butterfly over the 4 block classes) orders are fixed. So a row's bits are the same alone or in
// any batch. They differ from the FFMA and fp16 versions' bits (another summation order), hence
// their own Variant::order.
namespace imma {

// Tiles, digit planes, shared memory and the widths handled (the lab's host code uses them too).
constexpr int kRowsA = 8;                // gate and up rows per warp and A task (16 weight rows)
constexpr int kTileA = kWarps * kRowsA;  // intermediate rows per A task
constexpr int kPad = 16;                 // bytes between digit planes: the 8 reading lanes hit distinct banks

DELTAFIN_HOST_DEVICE inline size_t plane_stride(int latent, int inter) {
  return static_cast<size_t>(latent > inter ? latent : inter) + kPad;
}
// Ring versions: per warp, S stages of NR row sets x 32 lanes x (16 weight bytes + 4 scale bytes).
constexpr int stage_bytes(int nr) { return nr * 32 * 20; }
// NA vectors x 4 digit planes, then one zero plane (what the non-feeding lanes read).
DELTAFIN_HOST_DEVICE inline size_t digits_bytes(int latent, int inter, int na) {
  return (static_cast<size_t>(na) * 4 + 1) * plane_stride(latent, inter);
}
inline size_t smem_bytes(int latent, int inter, int na, int stages) {
  return digits_bytes(latent, inter, na) + static_cast<size_t>(kWarps) * stages * stage_bytes(2);
}

// Shapes these versions handle: blocks per row a multiple of 4 (one per lane of a row group),
// whole tiles.
inline bool fits(int latent, int inter, int tile_b) {
  return latent % 128 == 0 && inter % 128 == 0 && inter % kTileA == 0 && latent % tile_b == 0;
}

// mma.sync with integer operands exists from sm_80 on (DELTAFIN_SM80_ASM traps below).
__device__ __forceinline__ void mma_u8s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  DELTAFIN_SM80_ASM(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// 2 x |E2M1| by magnitude code 0..7, as bytes 0..7 of the pair (lo, hi). kLutHi is an immediate
// of the permute; kLutLo must sit in a per-thread register: as a constant the compiler keeps it
// in a uniform register and copies it back before every permute (32 extra instructions per block
// step), so it comes from a shuffle, whose result it does not rebuild.
constexpr uint32_t kLutLo = 0x03020100u, kLutHi = 0x0C080604u;
__device__ __forceinline__ uint32_t lut_register() { return __shfl_sync(0xffffffffu, kLutLo, 0); }

// One 32-bit word of 8 codes (code i = nibble i, column i) -> the A fragment of one weight row:
// a0 / a2 = magnitudes of the positive codes 0-3 / 4-7 (M row g), a1 / a3 = of the negative ones
// (M row g + 8). k slots 4q + i and 16 + 4q + i hold codes i and 4 + i.
__device__ __forceinline__ void decode(uint32_t w, uint32_t lut_lo, uint32_t (&a)[4]) {
  const uint32_t n = w ^ 0x88888888u;
  a[0] = prmt(lut_lo, kLutHi, w);
  a[1] = prmt(lut_lo, kLutHi, n);
  a[2] = prmt(lut_lo, kLutHi, w >> 16);
  a[3] = prmt(lut_lo, kLutHi, n >> 16);
}

// The E8M0 factor 2^(e - 127) (e = 0: the subnormal 2^-127). The 1/2 of the doubled E2M1
// integers is restored together with 2^-k at the end of the row (exact).
__device__ __forceinline__ float block_scale(uint32_t e) { return __uint_as_float(max(e << 23, 0x00400000u)); }

// The mma accumulators run over a whole row (no zeroing per block: that costs a register move per
// accumulator and block); a block's integers are the differences from the previous block's. Per
// digit pair, lo = sum (pos - neg) of digit 0 + 256 x that of digit 1 (c[.][0..1] positive rows,
// c[.][2..3] negative rows); the running values stay below 2^31 for any K3 row (at most 2^25 per
// block), and the differences are exact anyway in wrapping int32 arithmetic.
struct RowSums {
  int c[2][4];  // mma accumulators for digits 0-1 and 2-3
  int lo, hi;   // their combination after the previous block
};

// The block's exact integer sum_p 2^(8p) (pos_p - neg_p), rounded to fp32 once.
__device__ __forceinline__ float block_value(RowSums& rs) {
  const int lo = (rs.c[0][0] - rs.c[0][2]) + (rs.c[0][1] - rs.c[0][3]) * 256;
  const int hi = (rs.c[1][0] - rs.c[1][2]) + (rs.c[1][1] - rs.c[1][3]) * 256;
  const int dlo = lo - rs.lo, dhi = hi - rs.hi;  // this block: |.| < 2^25 and 2^23
  rs.lo = lo;
  rs.hi = hi;
  // |dhi|, |dlo| < 2^24 convert exactly, and the FMA rounds dhi 2^16 + dlo once: the same bits as
  // an int64 sum converted to fp32, in three cheap instructions.
  return __fmaf_rn(static_cast<float>(dhi), 65536.0f, static_cast<float>(dlo));
}

__device__ __forceinline__ uint4 ld_weights(const uint4* p) { return ld_stream16_l2(p); }

// What a block's digit slots hold (so that consecutive tasks on the same vector, e.g. every
// gate/up task of a one-row pass, stage it once): tag >= 0 is row t of z, tag <= -2 is h of
// assignment -2 - tag, -1 nothing; and that vector's k.
struct Staged {
  int tag;
  int k;
};

// The whole block's barrier (the warp-specialised versions pass one for their consumer warps).
struct BlockSync {
  static constexpr int kCount = kThreads;  // threads it joins: 0 .. kCount - 1
  __device__ __forceinline__ void operator()() const { __syncthreads(); }
};

// Stages the digit planes of one activation vector (width floats) into xs (4 planes, `stride`
// bytes apart) and returns k (x is scaled by 2^k), unless the slot already holds it. Called by
// threads 0 .. Sync::kCount - 1 (all that `sync` joins; s_red holds one float per warp of them);
// ends with `sync` when it writes.
template <bool kCoherent, class Sync = BlockSync>
__device__ int stage_digits(uint8_t* xs, size_t stride, const float* x, int width, float* s_red, Staged* slot, int tag,
                            Sync sync = {}) {
  if (slot->tag == tag) return slot->k;  // the same for every thread: written before a barrier
  const float4* src = reinterpret_cast<const float4*>(x);
  const int n4 = width / 4;
  float m = 0.f;
  for (int f = threadIdx.x; f < n4; f += Sync::kCount) {
    const float4 v = kCoherent ? __ldcg(src + f) : __ldg(src + f);
    m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
  }
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  sync();  // the previous user of s_red and xs is done
  if ((threadIdx.x & 31) == 0) s_red[threadIdx.x >> 5] = m;
  sync();
  m = s_red[0];
#pragma unroll
  for (int w = 1; w < Sync::kCount / 32; ++w) m = fmaxf(m, s_red[w]);
  int e = 0;
  if (m > 0.f) frexpf(m, &e);  // m < 2^e
  const int k = m > 0.f ? 30 - e : 0;
  for (int f = threadIdx.x; f < n4; f += Sync::kCount) {
    const float4 v = kCoherent ? __ldcg(src + f) : __ldg(src + f);
    const float in[4] = {v.x, v.y, v.z, v.w};
    uint32_t plane[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int r = __float2int_rn(ldexpf(in[i], k));  // |r| < 2^30
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const int d = static_cast<int8_t>(r & 0xff);  // balanced digit in [-128, 127]
        plane[p] |= (static_cast<uint32_t>(d) & 0xffu) << (8 * i);
        r = (r - d) >> 8;  // exact: r - d is a multiple of 256
      }
    }
#pragma unroll
    for (int p = 0; p < 4; ++p) *reinterpret_cast<uint32_t*>(xs + p * stride + 4 * f) = plane[p];
  }
  if (threadIdx.x == 0) *slot = Staged{tag, k};
  sync();
  return k;
}

__device__ __forceinline__ uint2 lds64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint32_t lds8(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}

// Where this lane's B operand comes from (shared-memory addresses): a lane that feeds column g
// (q == g / 2) reads digit planes g % 2 and g % 2 + 2 at its class's columns; every other lane
// reads a zero plane, so no lane branches or selects.
struct BSource {
  uint32_t b01;   // digits 0/1 of vector 0 at column q * 32 (add 128 j + 8 s)
  uint32_t d23;   // to digits 2/3
  uint32_t dvec;  // to the next staged vector
};

__device__ __forceinline__ BSource b_source(uint32_t xs, uint32_t zero, uint32_t stride) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  if (q == (g >> 1)) return BSource{xs + (g & 1) * stride + q * 32, 2 * stride, 4 * stride};
  // 8 bytes in: these lanes' words then sit in other banks than the feeding lanes' (stride is
  // 16 modulo 128, so planes 0-3 start at banks 0, 4, 8, 12 and the zero plane at bank 16 + 2).
  return BSource{zero + 8 + q * 32, 0, 0};
}

// One block (4 k steps of 8 codes) of each of the NR row sets of this lane against NA vectors.
template <int NR, int NA>
__device__ __forceinline__ void block_step(const uint4 (&cur)[NR], const uint32_t (&sc)[NR], uint32_t bj,
                                           const BSource& bs, int na, uint32_t lut_lo, RowSums (&rs)[NR][NA],
                                           float (&acc)[NR][NA]) {
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    uint32_t a[NR][4];
#pragma unroll
    for (int r = 0; r < NR; ++r)
      decode(s == 0 ? cur[r].x : s == 1 ? cur[r].y : s == 2 ? cur[r].z : cur[r].w, lut_lo, a[r]);
#pragma unroll
    for (int i = 0; i < NA; ++i) {
      if (NA > 1 && i >= na) break;
      const uint32_t b = bj + i * bs.dvec + s * 8;
      const uint2 b01 = lds64(b), b23 = lds64(b + bs.d23);
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        mma_u8s8(rs[r][i].c[0], a[r], b01.x, b01.y);
        mma_u8s8(rs[r][i].c[1], a[r], b23.x, b23.y);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < NA; ++i) {
    if (NA > 1 && i >= na) break;
#pragma unroll
    for (int r = 0; r < NR; ++r) acc[r][i] = __fmaf_rn(block_value(rs[r][i]), block_scale(sc[r]), acc[r][i]);
  }
}

// NR sets of 8 weight rows (pointers already at this lane's row and first block: row base + q
// uint4 / bytes) against NA staged activation vectors: acc[r][i] += this lane's blocks (class q)
// of row set r for vector i. nj = blocks per row / 4. Register prefetch: the next block of every
// row is in flight while this one is computed.
template <int NR, int NA>
__device__ __forceinline__ void rows_pass(const uint4* const (&wrow)[NR], const uint8_t* const (&srow)[NR],
                                          const BSource& bs, int nj, int na, float (&acc)[NR][NA]) {
  RowSums rs[NR][NA] = {};
  const uint32_t lut_lo = lut_register();
  uint4 cur[NR];
  uint32_t sc[NR];
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    cur[r] = ld_weights(wrow[r]);
    sc[r] = __ldg(srow[r]);
  }
#pragma unroll 1
  for (int j = 0; j < nj; ++j) {
    const int jn = j + 1 < nj ? j + 1 : j;  // the last step re-reads its own block (a cache hit)
    uint4 nxt[NR];
    uint32_t sn[NR];
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      nxt[r] = ld_weights(wrow[r] + 4 * jn);
      sn[r] = __ldg(srow[r] + 4 * jn);
    }
    block_step<NR, NA>(cur, sc, bs.b01 + j * 128, bs, na, lut_lo, rs, acc);
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      cur[r] = nxt[r];
      sc[r] = sn[r];
    }
  }
}

// DELTAFIN_SM80_ASM (mxfp4_experts_mma.cuh): these versions run from sm_80 on only (fits() needs
// compute capability 8); builds for older targets get a trap instead of the instruction.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
  DELTAFIN_SM80_ASM("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src) {
  DELTAFIN_SM80_ASM("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { DELTAFIN_SM80_ASM("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  DELTAFIN_SM80_ASM("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Copies block 4j + q of each row set (16 bytes per lane) and the row's scales 4j..4j+3 into ring
// stage st; always one commit group, empty past the end, so that wait counts stay uniform. Every
// lane copies and later reads only its own bytes, so no barrier is needed between them.
template <int NR>
__device__ __forceinline__ void ring_issue(uint32_t ring, int st, const uint4* const (&wrow)[NR],
                                           const uint8_t* const (&srow4)[NR], int j, int nj) {
  const int lane = threadIdx.x & 31;
  if (j < nj) {
    const uint32_t base = ring + st * stage_bytes(NR);
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      cp_async16(base + r * 512 + lane * 16, wrow[r] + 4 * j);
      cp_async4(base + NR * 512 + r * 128 + lane * 4, srow4[r] + 4 * j);
    }
  }
  cp_async_commit();
}

// rows_pass with the weights streamed through a per-warp ring of S stages (S - 1 blocks of every
// row in flight per lane instead of one, without holding them in registers). The caller issued
// stages 0..S-2 (ring_issue j = 0..S-2) before staging the activations.
template <int NR, int NA, int S>
__device__ __forceinline__ void rows_pass_ring(const uint4* const (&wrow)[NR], const uint8_t* const (&srow4)[NR],
                                               uint32_t ring, const BSource& bs, int nj, int na, float (&acc)[NR][NA]) {
  const int lane = threadIdx.x & 31, q = lane & 3;
  RowSums rs[NR][NA] = {};
  const uint32_t lut_lo = lut_register();
  int st = 0;  // the stage holding block j
#pragma unroll 1
  for (int j = 0; j < nj; ++j) {
    ring_issue<NR>(ring, st == 0 ? S - 1 : st - 1, wrow, srow4, j + S - 1, nj);
    cp_async_wait<S - 1>();  // block j has landed
    const uint32_t sp = ring + st * stage_bytes(NR);
    uint4 cur[NR];
    uint32_t sc[NR];
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      cur[r] = lds128(sp + r * 512 + lane * 16);
      sc[r] = lds8(sp + NR * 512 + r * 128 + lane * 4 + q);
    }
    block_step<NR, NA>(cur, sc, bs.b01 + j * 128, bs, na, lut_lo, rs, acc);
    st = st + 1 == S ? 0 : st + 1;
  }
}

// The 4 block classes of a row meet in a fixed butterfly; every lane of the group gets the total.
__device__ __forceinline__ float class_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// This warp's ring (shared-memory address) after the digit planes and the zero plane.
template <int NA, int S>
__device__ __forceinline__ uint32_t ring_base(const Params& P, uint8_t* xs) {
  const int warp = threadIdx.x >> 5;
  return static_cast<uint32_t>(
      __cvta_generic_to_shared(xs + digits_bytes(P.latent, P.inter, NA) + warp * S * stage_bytes(2)));
}

template <int NA>
__device__ __forceinline__ BSource b_source(const Params& P, uint8_t* xs) {
  const uint32_t stride = static_cast<uint32_t>(plane_stride(P.latent, P.inter));
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(xs));
  return b_source(base, base + NA * 4 * stride, stride);
}

template <int NA, int S>
__device__ __forceinline__ void task_gate_up(const Params& P, int g, int tile, uint8_t* xs, float* s_red,
                                             Staged* staged) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, q = lane & 3;
  const MxExpert e = P.experts[g];
  const int nblk = P.latent / 32;
  const int o = tile * kTileA + warp * kRowsA + (lane >> 2);  // inter % kTileA == 0: always a real row
  const size_t stride = plane_stride(P.latent, P.inter);
  const uint4* const wrow[2] = {static_cast<const uint4*>(e.gate_packed) + static_cast<int64_t>(o) * nblk + q,
                                static_cast<const uint4*>(e.up_packed) + static_cast<int64_t>(o) * nblk + q};
  const uint8_t* const srow[2] = {static_cast<const uint8_t*>(e.gate_scale) + static_cast<int64_t>(o) * nblk + q,
                                  static_cast<const uint8_t*>(e.up_scale) + static_cast<int64_t>(o) * nblk + q};
  const uint8_t* const srow4[2] = {srow[0] - q, srow[1] - q};
  const uint32_t ring = ring_base<NA, S>(P, xs);
  const BSource bs = b_source<NA>(P, xs);
  for (int ab = P.grp_begin[g]; ab < P.grp_begin[g + 1]; ab += NA) {
    const int na = min(NA, P.grp_begin[g + 1] - ab);
    if constexpr (S > 0)  // the first blocks travel while the activations are staged
      for (int st = 0; st < S - 1; ++st) ring_issue<2>(ring, st, wrow, srow4, st, nblk / 4);
    int k[NA];
#pragma unroll
    for (int i = 0; i < NA; ++i)
      if (i < na)
        k[i] = stage_digits<false>(xs + i * 4 * stride, stride,
                                   P.z + static_cast<int64_t>(P.assign_list[ab + i] / P.K) * P.latent, P.latent, s_red,
                                   staged + i, P.assign_list[ab + i] / P.K);
    float acc[2][NA];
#pragma unroll
    for (int i = 0; i < NA; ++i) acc[0][i] = acc[1][i] = 0.f;
    if constexpr (S > 0) rows_pass_ring<2, NA, S>(wrow, srow4, ring, bs, nblk / 4, na, acc);
    else rows_pass<2, NA>(wrow, srow, bs, nblk / 4, na, acc);
#pragma unroll
    for (int i = 0; i < NA; ++i) {
      if (i >= na) break;
      const float gs = ldexpf(class_sum(acc[0][i]), -k[i] - 1);
      const float us = ldexpf(class_sum(acc[1][i]), -k[i] - 1);
      if (q == 0) P.h[static_cast<int64_t>(P.assign_list[ab + i]) * P.inter + o] = situ_act(gs, us);
    }
  }
}

// RB8 sets of 8 down rows per warp.
template <int NA, int RB8, int S>
__device__ __forceinline__ void task_down(const Params& P, int g, int tile, uint8_t* xs, float* s_red, Staged* staged) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, q = lane & 3;
  const MxExpert e = P.experts[g];
  const int nblk = P.inter / 32;
  const int o0 = tile * P.tile_b + warp * 8 * RB8 + (lane >> 2);  // latent % tile_b == 0: real rows
  const size_t stride = plane_stride(P.latent, P.inter);
  const uint4* wrow[RB8];
  const uint8_t* srow[RB8];
#pragma unroll
  for (int r = 0; r < RB8; ++r) {
    wrow[r] = static_cast<const uint4*>(e.down_packed) + static_cast<int64_t>(o0 + 8 * r) * nblk + q;
    srow[r] = static_cast<const uint8_t*>(e.down_scale) + static_cast<int64_t>(o0 + 8 * r) * nblk + q;
  }
  const uint8_t* srow4[RB8];
#pragma unroll
  for (int r = 0; r < RB8; ++r) srow4[r] = srow[r] - q;
  const uint32_t ring = ring_base<NA, S>(P, xs);
  const BSource bs = b_source<NA>(P, xs);
  for (int ab = P.grp_begin[g]; ab < P.grp_begin[g + 1]; ab += NA) {
    const int na = min(NA, P.grp_begin[g + 1] - ab);
    if constexpr (S > 0)
      for (int st = 0; st < S - 1; ++st) ring_issue<RB8>(ring, st, wrow, srow4, st, nblk / 4);
    int k[NA];
#pragma unroll
    for (int i = 0; i < NA; ++i)
      if (i < na)  // h was written by this launch: read through L2 only
        k[i] =
            stage_digits<true>(xs + i * 4 * stride, stride, P.h + static_cast<int64_t>(P.assign_list[ab + i]) * P.inter,
                               P.inter, s_red, staged + i, -2 - P.assign_list[ab + i]);
    float acc[RB8][NA];
#pragma unroll
    for (int r = 0; r < RB8; ++r)
#pragma unroll
      for (int i = 0; i < NA; ++i) acc[r][i] = 0.f;
    if constexpr (S > 0) rows_pass_ring<RB8, NA, S>(wrow, srow4, ring, bs, nblk / 4, na, acc);
    else rows_pass<RB8, NA>(wrow, srow, bs, nblk / 4, na, acc);
#pragma unroll
    for (int i = 0; i < NA; ++i) {
      if (i >= na) break;
      const int a = P.assign_list[ab + i];
#pragma unroll
      for (int r = 0; r < RB8; ++r) {
        const float v = ldexpf(class_sum(acc[r][i]), -k[i] - 1);
        if (q == 0) P.d[static_cast<int64_t>(a) * P.latent + o0 + 8 * r] = v;
      }
    }
  }
}

}  // namespace imma

// S: ring stages per warp (0: registers, one block of every row in flight per lane).
template <int NA, int RB8, int kMinBlocks, int S = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks) expert_mlp_imma_kernel(const Params P) {
  pdl_enter();
  extern __shared__ __align__(16) uint8_t xs8[];
  __shared__ float s_red[kWarps];
  __shared__ imma::Staged staged[NA];
  if (threadIdx.x < NA) staged[threadIdx.x] = imma::Staged{-1, 0};
  {
    const size_t stride = imma::plane_stride(P.latent, P.inter);
    uint32_t* zero = reinterpret_cast<uint32_t*>(xs8 + NA * 4 * stride);
    for (size_t i = threadIdx.x; i < stride / 4; i += kThreads) zero[i] = 0;
  }
  __syncthreads();  // the zero plane and the staging tags are set
  run_tickets(
      P, [&](unsigned, int g, int tile) { imma::task_gate_up<NA, S>(P, g, tile, xs8, s_red, staged); },
      [&](unsigned, int g, int tile) { imma::task_down<NA, RB8, S>(P, g, tile, xs8, s_red, staged); });
}
