#pragma once
// Which version of the fp32 routed-expert kernel (mxfp4_experts.cu; the lab's since the K3 forward's experts went
// fp64, so "the product" below is ExpertMlp as it ran in the product) runs a call. Plain C++: the policy
// is a function of the widths, the device's limits and the call, so it is unit-tested on the CPU
// (tests/kernels/tst_expert_kernel_policy.cpp). Every version a policy can choose sums in the order
// of the layout's default (the same bits), so the choice changes speed, never a result.
#include <cstddef>
#include <functional>
#include <optional>

#include "cuda/lab/expert_mlp.h"

namespace deltafin::cuda {

// The versions the product builds (by the numbers DELTAFIN_CUDA_EXPERT_VERSION and the docs use): those
// choose_expert_kernel picks on some GPU the product is built for (sm_86, sm_89, sm_90a, sm_120); the others are the
// lab's (kernels/cuda/lab/). Rows: the checkpoint's packed layout; fragments: repack_mx_fragments' layout.
enum class ExpertKernel {
  // Row layout, FFMA (reduction order 0): the only row-layout version, any widths (multiples of 32).
  v6,
  // Fragment layout, fp16 tensor cores (reduction order 1; sm_80 and newer, widths multiples of 256).
  v134,  // the fragment-layout default (K3 on sm_80 and newer)
  v212,  // calls of up to 8 rows below 2 rows per expert: combine in the down tasks, scale tables
  v183,  // calls of 1-2 rows where v212 does not fit or costs a block per SM
  v138,  // calls of 1-2 rows where v183 does not fit or costs a block per SM either
  v194,  // four rows per pass: calls from 1.2 rows per expert; and calls whose routing tables do not
         // fit the shared-memory copy that every other fragment-order version makes
};
constexpr int kExpertKernels = static_cast<int>(ExpertKernel::v194) + 1;

// "v134", ...
const char* expert_kernel_id(ExpertKernel k);

// What the device offers: the tensor-core versions need sm_80 and, each, their shared memory.
struct ExpertDevice {
  int cc_major = 0;
  size_t smem_optin = 0;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
};

// Dynamic shared memory of version k at these widths, and whether k runs them on device d.
size_t expert_kernel_smem(ExpertKernel k, int latent, int inter);
bool expert_kernel_fits(ExpertKernel k, int latent, int inter, const ExpertDevice& d);

// The layout the experts should be stored in: fragments wherever v134 fits (faster than every row-layout version at
// T = 1 to 8 on the H200, docs/PERFORMANCE.md), else rows.
ExpertLayout preferred_expert_layout(int latent, int inter, const ExpertDevice& d);

// The layout's default version: the one a call runs unless the policy below finds a faster one with
// the same bits. None: no version reading that layout fits.
std::optional<ExpertKernel> default_expert_kernel(int latent, int inter, ExpertLayout layout, const ExpertDevice& d);

// One call of the kernel.
struct ExpertCall {
  int rows = 1;                   // T
  double rows_per_expert = 1.0;   // assignments (T x top_k) per distinct expert, or its expectation
  bool aligned16 = true;          // every expert tensor 16-byte aligned (run(); run_routed requires it)
  bool tables_fit_shared = true;  // at most 128 distinct experts and 128 assignments (MetaTables)
};

// Blocks per SM a version runs at these widths (the occupancy calculator's answer, asked on demand).
using BlocksPerSm = std::function<int(ExpertKernel)>;

// The version that runs `call` on experts stored in `layout` (whose default must fit: see
// default_expert_kernel). The policy, in order:
//   fragments: v212 for calls of up to 8 rows below 2 rows per expert, where it fits and keeps the
//     default's blocks per SM; otherwise (where v212 does not qualify) v183, then v138, for calls of
//     1-2 rows. v194 from 1.2 rows per expert, where it fits and keeps the default's blocks per SM.
//     Otherwise v134. A call whose routing tables do not fit shared memory runs v194 (the same bits).
//   rows: v6 (the tiny test models; K3 only with the measurement switch DELTAFIN_CUDA_EXPERT_LAYOUT=rows).
// Why each: docs/CUDA.md "Routed experts".
ExpertKernel choose_expert_kernel(int latent, int inter, ExpertLayout layout, const ExpertDevice& d,
                                  const BlocksPerSm& blocks_per_sm, const ExpertCall& call);

// The fragment-order version without a shared copy of the routing tables: the policy's, and
// ExpertMlp's for a version selected by name whose tables do not fit that copy.
constexpr ExpertKernel kTablesFallback = ExpertKernel::v194;

}  // namespace deltafin::cuda
