#pragma once
// Geometry of the product's tensor-core expert kernels that the host needs as well as the device: task tiles,
// shared-memory sizes and the widths each kernel handles. Plain C++ (the device code includes it through
// mxfp4_experts_direct.cuh), so that the kernel policy (expert_kernel_policy.h) is unit-tested by the host compiler.
#include <cstddef>

#ifdef __CUDACC__
#define DELTAFIN_HOST_DEVICE __host__ __device__
#else
#define DELTAFIN_HOST_DEVICE
#endif

namespace deltafin::cuda::geometry {

constexpr int kWarps = 8;  // warps per block of every row-task kernel

// Fragment-order kernels (mxfp4_experts_direct.cuh).
namespace direct {
// NT tiles of 16 rows per warp. NT = 1 (the product's): warps 0-3 hold gate tiles and 4-7 the matching up tiles (A
// task: 64 intermediate rows), or one 16-row down tile each (B task: 128 latent rows). NT = 2 (the lab's): twice
// that per task. Why 1: docs/CUDA.md "Fragment-order expert versions".
template <int NT>
constexpr int tile_a() {
  return NT == 2 ? kWarps * 16 : kWarps / 2 * 16;
}
template <int NT>
constexpr int tile_b() {
  return kWarps * 16 * NT;
}
constexpr int kFragLanes = 24;                  // activation fragments of columns 0-5 (two vectors x three parts)
constexpr int kHeader = 128;                    // reduction scratch of stage_frags
constexpr int kSwap = kWarps / 2 * 32 * 2 * 4;  // NT = 1: the up tiles' sums, handed to the gate warps
constexpr int kRing = 4;                        // chunk slots per tile: the one in use and up to three in flight

// One buffer of activation fragments for the wider of the two K (lanes per 32-column block: 24, or
// 32 with zeros for columns 6 and 7, so that every lane reads its fragments unconditionally).
DELTAFIN_HOST_DEVICE inline size_t frag_bytes(int latent, int inter, int lanes = kFragLanes) {
  return static_cast<size_t>((latent > inter ? latent : inter) / 32) * lanes * 16;
}

// Scale tables: per warp, two groups' scales as floats, 4 chunks x 8 lane rows x 4 (rows g and
// g + 8 of the chunk's two blocks).
constexpr int kScaleTab = kWarps * 2 * 128 * 4;

// kNP pairs of activation vectors per pass: kNP fragment buffers (then the scale tables, if any).
inline size_t smem_bytes(int latent, int inter, int kNP = 1, int lanes = kFragLanes, bool stab = false) {
  return kHeader + kSwap + kNP * frag_bytes(latent, inter, lanes) + (stab ? kScaleTab : 0);
}

// Scales are read 8 at a time (four chunks per group): widths are multiples of 256.
template <int NT>
inline bool fits(int latent, int inter) {
  return latent % 256 == 0 && inter % 256 == 0 && inter % tile_a<NT>() == 0 && latent % tile_b<NT>() == 0;
}
}  // namespace direct

}  // namespace deltafin::cuda::geometry
