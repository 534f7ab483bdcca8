#pragma once
// The lab's variants of K3's fp64 routed experts (kernels/cuda/k3/experts.cu's k3::routed_experts), for
// deltafin-cuda-k3-bench's experts-sweep only: the same passes (stage, gate+up with SiTU, down, combine
// in slot order) and the same exact decoding (cuda/k3/experts64_tiles.cuh), with the rows a warp takes,
// the loads in flight, the block shape, how scales, activations and codes are read, the group and pass
// sizes and L2 prefetches as compile-time parameters. Every variant is batch invariant (a pair's sums
// never depend on the other pairs, the grouping or the grid); those with hb == 1 keep the product's
// summation order and so must give its bits, hb == 2 sums in another order (roundings apart).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda::lab {

struct Experts64Params {
  int ru;     // gate and up rows a warp takes at once with a one-pair group (product 4); halved as pairs double
  int rd;     // down rows a warp takes at once with a one-pair group (product 8)
  int ahead;  // steps of codes and scales each warp keeps in flight: 1 (product) or 2
  int warps;  // warps per block (product 4)
  int minb;   // blocks per SM the registers are sized for (__launch_bounds__; product 4)
  int sc;     // scales: 0 one byte per row and lane (product); 1 one 32-bit word per lane and step, spread by shuffles
  int xm;     // activations: 0 staged in global memory, read through L1 (product); n > 0 a group of up to n pairs
              // copies its rows into shared memory first
  int dec;    // E2M1 codes to doubles: 0 byte planes and prmt (product); 1 a 16-entry table in shared memory;
              // 2 shifts and masks per code
  int group;  // pairs of one expert per group, kMaxGroup (product 4): 1, 2, 4 or 8
  int fill;   // blocks per pair group aimed at: fill x SMs / pairs, within the product's bounds (product 4)
  int pass;   // (row, slot) pairs per pass, kChunkPairs (product 256)
  int pf;     // row groups ahead whose codes and scales each warp asks L2 for (cp.async.bulk.prefetch; product 0)
  int hb;     // 16-column half-blocks a lane takes per step: 1 (the product's order), 2 (whole 32-column blocks,
              // 16-byte code loads: another summation order)
};

int experts64_lab_count();
Experts64Params experts64_lab_params(int v);
// "u4d8a1w4b4s0x0c0g4f4n256p0h1": the parameters in that order.
std::string experts64_lab_name(int v);
// What the variant changes against the product, in a few words.
std::string experts64_lab_what(int v);
// Whether the variant sums in the product's order (so must give its bits).
bool experts64_lab_keeps_order(int v);
// Whether the variant runs these shapes (s1 needs widths that are multiples of 512, the row counts must
// divide by its rows at once).
bool experts64_lab_applies(int v, int latent, int inter);
// Doubles of workspace for T rows of k slots (the variant's pass size).
int64_t experts64_lab_scratch(int v, int T, int k, int latent, int inter);

// y[t] = sum over slots j in order of w[t][j] * down_e(SiTU(gate_e z[t], up_e z[t])), e = table[slot[t][j]],
// as k3::routed_experts (same arguments, device pointers).
void experts64_lab(int v, const MxExpert* table, const int32_t* slot, const double* w, int T, int k, int latent,
                   int inter, const double* z, double* scratch, double* y, cudaStream_t s);

}  // namespace deltafin::cuda::lab
