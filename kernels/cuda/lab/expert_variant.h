#pragma once
// One version of the routed-expert kernel as ExpertMlp runs it: the product's (mxfp4_experts.cu,
// one per ExpertKernel) and, through ExpertMlp::use_variant, the lab's (lab/expert_kernels_lab.h).
// Host code only.
#include <cstddef>

#include "cuda/lab/expert_kernel_policy.h"

namespace deltafin::cuda {

struct ExpertVariant {
  const char* name = nullptr;  // "vNN", then what it is
  const void* fn = nullptr;    // the __global__ function
  // Launches fn over a Params (expert_tasks.cuh) at `params` on `grid` blocks, ExpertMlp's grid for
  // the call (at most `cap` are resident at once), and sets *tickets to the tickets the launch
  // takes; returns the cudaError_t.
  int (*launch)(const void* fn, unsigned grid, unsigned cap, int threads, size_t smem, void* stream, const void* params,
                unsigned* tickets) = nullptr;
  size_t (*smem)(int latent, int inter) = nullptr;                       // dynamic shared memory per block
  bool (*fits)(int latent, int inter, const ExpertDevice& d) = nullptr;  // runs these widths on d
  int tile_a = 0, tile_b = 0;     // intermediate rows per gate/up task, latent rows per down task
  int order = 0;                  // reduction order: versions of one order compute the same bits
  bool fragments = false;         // reads fragment-order weights (repack_mx_fragments)
  bool aligned16 = false;         // loads expert tensors in 16-byte units
  bool tables_in_shared = false;  // copies the routing tables into shared memory (MetaTables)
  bool hmax = false;              // gate/up tasks record max |h| per assignment (Params::hmax)
  bool fused_combine = false;     // no combine tasks: down tasks combine the rows they complete
  // Tickets number the tasks, so the routing builder starts the ticket past the empty groups' gate/up
  // tasks; false: versions that skip empty groups themselves (their ticket starts at 0).
  bool ticket_per_task = true;
  int threads = 256;  // per block
};

// The product's version k, and the device ExpertMlp would run on (the current one).
const ExpertVariant& expert_variant(ExpertKernel k);
ExpertDevice current_expert_device();

}  // namespace deltafin::cuda
