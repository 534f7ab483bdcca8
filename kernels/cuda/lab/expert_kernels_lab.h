#pragma once
// The lab's expert-kernel versions (kernels/cuda/lab/): linked into deltafin-cuda-bench and the
// checker only.

namespace deltafin::cuda {

// Makes every ExpertMlp constructed afterwards offer the lab's versions as well (variants(),
// select_variant, DELTAFIN_CUDA_EXPERT_VERSION), after the product's. Call once, before any
// ExpertMlp exists; later calls do nothing.
void register_lab_expert_kernels();

}  // namespace deltafin::cuda
