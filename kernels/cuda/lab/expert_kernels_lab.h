#pragma once
// The lab's expert-kernel versions (kernels/cuda/lab/): linked into deltafin-cuda-bench and the
// checker only. Every version by name, the policy's (ExpertKernel, mxfp4_experts.cu) first, then
// the others (expert_kernels_lab.cu).
#include <string>
#include <vector>

#include "cuda/lab/expert_mlp.h"

namespace deltafin::cuda {

// The names of the versions that run m's shapes on the current device.
std::vector<std::string> expert_versions(const ExpertMlp& m);
// Makes m run the version of that name for every later call (ExpertMlp::use_variant).
void select_expert_version(ExpertMlp& m, const std::string& name);
// Versions with the same number sum in the same order and so compute bit-identical results.
int expert_reduction_order(const std::string& name);

// Diagnostics: where the traced expert versions (deltafin-cuda-bench --trace) write five 64-bit words per task of
// each launch, indexed by task number: (kind << 62) | (SM << 32) | block (kind 0 gate/up, 1 down, 2 combine), then
// %globaltimer (ns) at the task's start, after its waits, when its first pass is ready to stream, and at its end.
// `dev_records` must hold 5 x the launch's task count; nullptr stops the writes. The product's versions never
// write.
void set_expert_trace(unsigned long long* dev_records);

}  // namespace deltafin::cuda
