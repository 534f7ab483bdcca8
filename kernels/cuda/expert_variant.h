#pragma once
// One version of the routed-expert kernel as ExpertMlp runs it: the product's (mxfp4_experts.cu)
// and, where a program registers them, the lab's (lab/expert_kernels_lab.h). Host code only.
#include <cstddef>

#include "cuda/expert_kernel_policy.h"

namespace deltafin::cuda {

struct ExpertVariant {
  const char* name = nullptr;  // "vNN", then what it is
  const void* fn = nullptr;    // the __global__ function
  // Launches fn over a Params (expert_tasks.cuh) at `params`; returns the cudaError_t.
  int (*launch)(const void* fn, unsigned grid, int threads, size_t smem, void* stream, const void* params) = nullptr;
  size_t (*smem)(int latent, int inter) = nullptr;                       // dynamic shared memory per block
  bool (*fits)(int latent, int inter, const ExpertDevice& d) = nullptr;  // runs these widths on d
  int tile_a = 0, tile_b = 0;     // intermediate rows per gate/up task, latent rows per down task
  int order = 0;                  // reduction order: versions of one order compute the same bits
  bool fragments = false;         // reads fragment-order weights (repack_mx_fragments)
  bool aligned16 = false;         // loads expert tensors in 16-byte units
  bool tables_in_shared = false;  // copies the routing tables into shared memory (MetaTables)
  bool hmax = false;              // gate/up tasks record max |h| per assignment (Params::hmax)
  bool fused_combine = false;     // no combine tasks: down tasks combine the rows they complete
  bool warp_specialised = false;  // one block per SM taking one chunk of each phase (lab/mxfp4_experts_ws.cuh)
  int threads = 256;              // per block
};

// Makes ExpertMlp offer these versions too (by name: variants(), select_variant,
// DELTAFIN_CUDA_EXPERT_VERSION), after the product's.
void add_expert_variants(const ExpertVariant* variants, int count);

}  // namespace deltafin::cuda
