#pragma once
// The fp32 routed-expert MLP (ExpertMlp) and its fragment-order layout: the lab's since the K3
// forward runs its experts in fp64 (cuda/k3/k3_ops.h, k3::routed_experts). Linked only into
// deltafin-cuda-bench and the checkers (deltafin_kernels_cuda_lab, docs/CUDA.md). Plain C++, as
// cuda/cuda_kernels.h, whose MxExpert (one expert's six tensors on the device) it takes.
#include <cstdint>
#include <vector>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda {

// A packed matrix [rows][cols / 2] in fragment order (docs/CUDA.md "Fragment-order expert versions"): the same bytes,
// permuted so that the tensor-core lanes of the fragment-order versions read theirs in 16-byte loads. rows % 16 == 0,
// cols % 64 == 0; `out` holds rows * cols / 2 bytes, 16-byte aligned, not overlapping `packed`. Scales stay.
void repack_mx_fragments(const void* packed, void* out, int rows, int cols, Stream stream = nullptr);

// The expert kernel's grid: 0 (the default) lets each call choose (fewer blocks for calls of a few waves of tasks, see
// expert_grid in mxfp4_experts.cu); n > 0 caps every call at n blocks, for measuring and for checks (results never
// depend on it). DELTAFIN_CUDA_EXPERT_GRID=n sets the initial value.
void set_expert_grid(unsigned blocks);

// How an ExpertMlp's caller stores the packed codes of its experts on the device: as the checkpoint
// has them (rows), or each matrix repacked by repack_mx_fragments (fragments; scales unchanged).
enum class ExpertLayout { rows, fragments };

struct ExpertVariant;  // one kernel version (expert_variant.h)

// The routed-expert MLP of one MoE layer for T rows, in one launch:
//   y[t] = sum over j < top_k, in slot order, of weight[t][j] * down_e(SiTU(gate_e z[t], up_e z[t]))
// with e = experts[slot_expert[t*top_k + j]]. Each distinct expert's weights are read once for all
// rows that use it. Every (row, slot) is computed with the same reduction order whatever else is in
// the batch, so the layer is batch invariant. Owns its device workspace; one object per stream.
class ExpertMlp {
 public:
  // latent and inter: multiples of 32 (K3: 3584 and 3072). layout: how the experts passed in are
  // stored; the default version is the best of those that read that layout (fragments: only where
  // preferred_layout says so, else the constructor throws).
  ExpertMlp(int latent, int inter, int top_k, int max_rows, ExpertLayout layout = ExpertLayout::rows);
  // The layout whose default version is fastest for these shapes on the current device: fragments where a
  // fragment-order version fits (K3's shapes on sm_80 and newer, docs/CUDA.md "Routed experts"), unless
  // DELTAFIN_CUDA_EXPERT_LAYOUT=rows, or DELTAFIN_CUDA_EXPERT_VERSION names v6.
  static ExpertLayout preferred_layout(int latent, int inter);
  ExpertLayout layout() const { return layout_; }
  ~ExpertMlp();
  ExpertMlp(const ExpertMlp&) = delete;
  ExpertMlp& operator=(const ExpertMlp&) = delete;

  // experts: the distinct experts used by this batch (host array of device pointers); slot_expert / slot_weight: host
  // arrays [T][top_k]. dev_z [T][latent], dev_y [T][latent]. Host arrays may be reused as soon as this returns.
  void run(const std::vector<MxExpert>& experts, const int32_t* slot_expert, const float* slot_weight, int T,
           const float* dev_z, float* dev_y, Stream stream = nullptr);
  // The same layer with the routing left on the device, as k3::router_select (cuda/k3/k3_ops.h) writes it: no host
  // synchronization, so the call can be captured in a CUDA graph. dev_table [n_experts]: every expert of the layer,
  // indexed by global expert id (each entry with run()'s pointer requirements, and 16-byte aligned: there is no
  // per-call fallback to an FFMA version here); dev_idx / dev_weight [T][top_k]: ids in [0, n_experts). One small
  // kernel builds run()'s tables from them, then the expert kernel runs: bit-identical to run() with the same routing.
  // A broken contract (id out of range, null or misaligned expert) traps. n_experts * 3 + T * top_k <= 12,288 ints.
  void run_routed(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight, int T,
                  const float* dev_z, float* dev_y, Stream stream = nullptr);
  // run_routed in two steps, so the tables can be built on the router's stream while another stream computes dev_z:
  // plan_routed queues the table builder on `stream`; run_planned queues the expert kernel over those tables on
  // `stream`, which the caller must have ordered after plan_routed's stream work (an event). One plan per run, in
  // order; the same bits.
  void plan_routed(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight, int T,
                   Stream stream = nullptr);
  void run_planned(int T, const float* dev_z, float* dev_y, Stream stream = nullptr);

  int latent() const { return latent_; }
  int inter() const { return inter_; }
  int top_k() const { return top_k_; }
  int max_rows() const { return max_rows_; }
  // The numbered kernel version in use: the layout's default (each call runs it or a version with its bits), or the
  // one DELTAFIN_CUDA_EXPERT_VERSION=vNN (v6, v134, v212, v183, v138 or v194) or use_variant names.
  const char* variant() const;
  // Runs v for every later call (null: the policy again); v must outlive this object and fit its
  // shapes. For benchmarks and checks: the lab's select_expert_version (lab/expert_kernels_lab.h).
  void use_variant(const ExpertVariant* v);
  // Whether a call of a few waves of tasks may take fewer blocks than the device holds (expert_grid; the default):
  // faster when the kernel has the GPU to itself; a caller that runs other work beside it turns it off (the K3
  // forward: docs/CUDA.md "Routed experts").
  void set_few_wave_grid(bool on);
  // Whether the version in use reads the packed weights in fragment order (repack_mx_fragments):
  // the default of a fragments-layout object, or a fragment-order version selected by name.
  bool fragment_layout() const;

 private:
  int latent_, inter_, top_k_, max_rows_;
  ExpertLayout layout_;
  struct Impl;
  Impl* impl_;
};

}  // namespace deltafin::cuda
