#pragma once
// The routing tables of ExpertMlp's kernel built on the device from the router's outputs
// (ExpertMlp::run_routed), so that a MoE layer needs no host round trip. Internal to kernels/cuda.
#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {

// Device memory the expert kernel reads its routing from; ExpertMlp::run uploads the same layout
// from the host.
struct RoutingTables {
  MxExpert* experts;   // [n_groups]
  int* grp_begin;      // [n_groups + 1] into assign_list
  int* assign_list;    // [T * K] assignments (t * K + j) grouped by distinct expert, ascending within a group
  int* slot_group;     // [T * K] group of each slot
  float* slot_weight;  // [T * K]
  unsigned* ticket;    // the expert kernel's counters, reset here: the ticket,
  unsigned* doneA;     // [n_groups] gate/up tiles done per group,
  unsigned* doneB;     // [n_groups] down tiles done per group
};

// One small launch. The host cannot know how many distinct experts the routing names, so the
// tables always hold n_groups = min(n_experts, T * K) groups (the size the launch was planned
// for): the nG used experts, ascending by id, are groups n_groups - nG .. n_groups - 1, and the
// first n_groups - nG groups are empty. Their A tasks are skipped by starting the ticket at
// (n_groups - nG) * a_tiles with their doneA counters already complete; their B tasks find no
// assignment and return at once. Ids outside [0, n_experts), or a used expert with a null or
// misaligned (`align` bytes) pointer, stop the launch with a trap: the caller's contract is broken
// and continuing would read stray memory.
void build_routing_tables(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight,
                          int T, int K, int n_groups, int a_tiles, int align, const RoutingTables& out, cudaStream_t s);

}  // namespace deltafin::cuda
