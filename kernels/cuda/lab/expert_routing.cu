// ExpertMlp::run_routed's table builder: distinct experts, per-expert assignment lists, slot -> group and weights,
// from the router's [T][K] ids and weights in device memory, plus the expert kernel's counters; one block, so the
// tables are complete before the expert kernel starts. Groups follow the experts' first slots (row 0's experts
// first, then the experts row 1 adds, ...), assignments ascend within a group, so that a block's successive tasks
// often keep their staged activations (docs/CUDA.md "Routed experts"). The order never changes a result.
#include "cuda/lab/expert_routing.cuh"

#include <string>

namespace deltafin::cuda {
namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ bool bad_ptr(const void* p, int align) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(align) != 0;
}

__global__ void __launch_bounds__(kThreads)
    routing_tables_kernel(const MxExpert* __restrict__ table, int n, const int32_t* __restrict__ idx,
                          const float* __restrict__ weight, int A, int n_groups, int a_tiles, int align,
                          RoutingTables out) {
  pdl_enter();
  extern __shared__ int sm[];
  int* cnt = sm;            // [n] slots naming each expert
  int* off = sm + n;        // [n] where the expert's assignments start in assign_list
  int* group = sm + 2 * n;  // [n] the expert's group
  int* ids = sm + 3 * n;    // [A] the routing, staged
  int* first = ids + A;     // [A] 1 where slot a is its expert's first slot
  __shared__ int part_c[kThreads], part_u[kThreads];
  const int tid = threadIdx.x;
  for (int e = tid; e < n; e += kThreads) cnt[e] = 0;
  __syncthreads();
  for (int a = tid; a < A; a += kThreads) {
    const int e = idx[a];
    if (e < 0 || e >= n) __trap();
    ids[a] = e;
    atomicAdd(&cnt[e], 1);
  }
  __syncthreads();
  for (int a = tid; a < A; a += kThreads) {
    int f = 1;
    for (int b = 0; b < a && f; ++b) f = ids[b] != ids[a];
    first[a] = f;
  }
  __syncthreads();
  // Exclusive scans over the slots of "first" (group ranks) and of the first slots' counts
  // (offsets): each thread walks a contiguous chunk, the chunk totals are scanned across the block.
  const int chunk = (A + kThreads - 1) / kThreads;
  const int lo = min(A, tid * chunk), hi = min(A, lo + chunk);
  int c = 0, u = 0;
  for (int a = lo; a < hi; ++a) {
    c += first[a] ? cnt[ids[a]] : 0;
    u += first[a];
  }
  part_c[tid] = c;
  part_u[tid] = u;
  __syncthreads();
  for (int d = 1; d < kThreads; d <<= 1) {
    const int pc = tid >= d ? part_c[tid - d] : 0, pu = tid >= d ? part_u[tid - d] : 0;
    __syncthreads();
    part_c[tid] += pc;
    part_u[tid] += pu;
    __syncthreads();
  }
  const int empty = n_groups - part_u[kThreads - 1];
  if (empty < 0) __trap();  // n_groups is min(n, A): more distinct experts cannot exist
  c = part_c[tid] - c;
  u = empty + part_u[tid] - u;
  for (int a = lo; a < hi; ++a) {
    if (!first[a]) continue;
    const int e = ids[a];
    off[e] = c;
    group[e] = u;
    const MxExpert x = table[e];
    if (bad_ptr(x.gate_packed, align) || bad_ptr(x.gate_scale, align) || bad_ptr(x.up_packed, align) ||
        bad_ptr(x.up_scale, align) || bad_ptr(x.down_packed, align) || bad_ptr(x.down_scale, align))
      __trap();
    out.experts[u] = x;
    out.grp_begin[u] = c;
    ++u;
    c += cnt[e];
  }
  // Empty groups: no assignment, and an expert that is never read but keeps the table valid.
  for (int g = tid; g < empty; g += kThreads) {
    out.grp_begin[g] = 0;
    out.experts[g] = table[ids[0]];
  }
  if (tid == 0) {
    out.grp_begin[n_groups] = A;
    *out.ticket = static_cast<unsigned>(empty) * static_cast<unsigned>(a_tiles);
  }
  for (int g = tid; g < n_groups; g += kThreads) {
    out.doneA[g] = g < empty ? static_cast<unsigned>(a_tiles) : 0u;
    out.doneB[g] = 0u;
  }
  __syncthreads();  // off and group are complete
  for (int a = tid; a < A; a += kThreads) {
    const int e = ids[a];
    int pos = 0;
    for (int b = 0; b < a; ++b) pos += ids[b] == e;
    out.assign_list[off[e] + pos] = a;
    out.slot_group[a] = group[e];
    out.slot_weight[a] = weight[a];
  }
}

}  // namespace

void build_routing_tables(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight,
                          int T, int K, int n_groups, int a_tiles, int align, const RoutingTables& out,
                          cudaStream_t s) {
  const int A = T * K;
  const size_t smem = (3 * static_cast<size_t>(n_experts) + 2 * static_cast<size_t>(A)) * sizeof(int);
  if (smem > 48 * 1024)
    throw CudaError("ExpertMlp::run_routed: " + std::to_string(n_experts) + " experts and " + std::to_string(A) +
                    " slots exceed the table builder's shared memory");
  DELTAFIN_CUDA_CHECK(launch(routing_tables_kernel, 1, kThreads, smem, s, dev_table, n_experts, dev_idx, dev_weight, A,
                             n_groups, a_tiles, align, out));
}

}  // namespace deltafin::cuda
