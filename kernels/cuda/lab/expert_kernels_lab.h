#pragma once
// The lab's expert-kernel versions (kernels/cuda/lab/): linked into deltafin-cuda-bench and the
// checker only.

namespace deltafin::cuda {

// Makes every ExpertMlp constructed afterwards offer the lab's versions as well (variants(),
// select_variant, DELTAFIN_CUDA_EXPERT_VERSION), after the product's. Call once, before any
// ExpertMlp exists; later calls do nothing.
void register_lab_expert_kernels();

// Diagnostics: where the traced expert versions (deltafin-cuda-bench --trace) write five 64-bit words per task of
// each launch, indexed by task number: (kind << 62) | (SM << 32) | block (kind 0 gate/up, 1 down, 2 combine), then
// %globaltimer (ns) at the task's start, after its waits, when its first pass is ready to stream, and at its end.
// `dev_records` must hold 5 x the launch's task count; nullptr stops the writes. The product's versions never
// write.
void set_expert_trace(unsigned long long* dev_records);

}  // namespace deltafin::cuda
