#pragma once
// Checks of the CUDA K3 forward (engine/cuda) against the k3-tiny goldens, the CPU session and
// itself (batch invariance, partial commits). Qt-free so that deltafin-cuda-k3 can run them on
// GPU machines without Qt; tst_cuda_k3 wraps them for ctest.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_checks.h"

namespace deltafin::cuda::check {

// Logits, layer streams and routing of every golden prompt; greedy goldens; GPU greedy == CPU greedy.
std::vector<Result> k3_goldens(const std::string& fixture_dir);
// Row alone == the same row inside a T-row pass (bitwise); commit(n) and rollback == never staged.
std::vector<Result> k3_transactions(const std::string& model_dir, uint64_t seed);
// The forward split between the GPU and the CPU (placement::SplitLayout) at every layer boundary,
// with streamed layers and under planned budgets: greedy ids against the goldens, the whole-GPU and
// the CPU forwards; budget errors.
std::vector<Result> k3_split(const std::string& fixture_dir);
// The forward over two GPUs (placement::DeviceLayout; on a machine with one GPU, two logical GPUs on
// it) split at every layer boundary, lm_head on either, hand-overs device to device and through
// pinned host memory, and a planner's two-GPU plan: greedy ids against the goldens and exactly the
// one-GPU ids, prefill logits bit for bit; device list errors.
std::vector<Result> k3_multi(const std::string& fixture_dir);
// The KDA recurrence, the router (K3's shape, planted ties) and AttnRes against the CPU forward's
// fp64 arithmetic on random inputs (every op of kernels/cuda/k3 alone: cuda_k3_op_checks.cpp).
std::vector<Result> k3_kernels(uint64_t seed);

}  // namespace deltafin::cuda::check
