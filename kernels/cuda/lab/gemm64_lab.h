#pragma once
// The lab's variants of K3's fp64 GEMV over BF16 weights (kernels/cuda/k3/gemm.cu's gemm64_kernel),
// for deltafin-cuda-k3-bench's gemm-sweep only: the same math (BF16 widened exactly, every product and
// sum in fp64 on the tensor cores), with the block shape, the loads in flight, where the activations
// come from, the accumulator chains and the split of the width over blocks as compile-time parameters.
// Each variant's summation order depends on the width and the variant only (never on T or on where an
// output lands), so each is batch invariant; variants with another order than the product's differ
// from it by roundings only.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace deltafin::cuda::lab {

struct Gemm64Params {
  int ws;   // warps across the width per row group (the product's kSplit): the partial sums per output
  int rw;   // row groups per block (warps = ws * rw; the row groups share the activations through L1)
  int mt;   // row tiles of 8 per warp
  int d;    // weight chunks (32 wide) per lane loaded one round ahead
  int xm;   // activations: 0 loaded at use, 1 loaded one round ahead with the weights, 2 staged in smem
  int acc;  // accumulator sets per output (even / odd steps, added at the end)
  int ks;   // blocks across the width per row tile (their partial sums added in block order)
  int pf;   // 1: the first round's weights are loaded before the wait on the previous kernel (PDL)
  int nt2;  // 1: T > 8 takes 16 activation rows per pass; 0: the variant runs T <= 8 only
};

int gemm64_lab_count();
Gemm64Params gemm64_lab_params(int v);
// "s8r1m4d1x0a1k1p0": the parameters in that order.
std::string gemm64_lab_name(int v);
// Whether variant v runs T rows of width `in` on this device (nt2 = 0: T <= 8; xm = 2 needs T * in
// doubles of shared memory per block).
bool gemm64_lab_applies(int v, int T, int64_t in);
// Doubles of scratch the ks > 1 variants need for `out` x T outputs (0 otherwise), and the counters
// (zeroed once by the caller, left zeroed by every call): one per block row.
int64_t gemm64_lab_scratch(int v, int64_t out, int T);
int64_t gemm64_lab_counters(int v, int64_t out);

// y[t][o] = sum_k w[o][k] x[t][k] for t < T, o < out (w BF16 [out][in]), as k3::gemm.
void gemm64_lab(int v, const uint16_t* w, int64_t out, int64_t in, const double* x, int64_t ldx, int T, double* y,
                int64_t ldy, double* scratch, unsigned* counters, cudaStream_t s);

}  // namespace deltafin::cuda::lab
