#pragma once
// Host API of the CUDA kernels. Plain C++ only (no CUDA types) so that engine code compiled by
// the host compiler can include it. Every pointer named dev_* is device memory; every call is
// asynchronous on the given stream (nullptr = the legacy default stream) unless it says otherwise.
// Errors (no device, launch failures, bad shapes) throw deltafin::cuda::CudaError.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace deltafin::cuda {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Stream = void*;  // a cudaStream_t, kept opaque here

// True when a CUDA device can be used; otherwise *why says what is missing.
bool device_available(std::string* why = nullptr);

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_bytes = 0, free_bytes = 0;
  size_t l2_bytes = 0;
  int driver_version = 0, runtime_version = 0;
};
DeviceInfo device_info();

void synchronize();  // waits for all work on the device

// Owns device memory (cudaMalloc). Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return bytes_; }
  // Synchronous copies (they return when the bytes have arrived).
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  void fill_byte(int value);

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// ---- Spine kernels -----------------------------------------------------------------------------

// Y[t][o] = sum_i W[o][i] * X[t][i] for o < out, t < T. W is BF16 bits, row-major [out][in], rows 16-byte aligned
// (in % 8 == 0, dev_w 16-byte aligned). fp32 accumulation; each output element is reduced in one fixed order that
// depends on `in` only, never on T or on the other rows (batch invariance: row t is bit-identical in any T-row pass).
// Runs the version bf16_gemm_default_version(out, in) picks: a choice by shape only, never by T.
void bf16_gemm(const void* dev_w, int64_t out, int64_t in, const float* dev_x, int64_t ldx, int T, float* dev_y,
               int64_t ldy, Stream stream = nullptr);

// Numbered versions of bf16_gemm (for checks and benchmarks): 1 = FFMA (the lab's), 2.. = tensor
// cores with x split exactly into three bf16 parts. Each version is batch invariant on its own;
// different versions sum in different orders and so give different (equally accurate) bits.
std::vector<int> bf16_gemm_versions();  // those this device can run, the registered ones included
std::string bf16_gemm_version_name(int version);
int bf16_gemm_default_version(int64_t out, int64_t in);
void bf16_gemm_version(int version, const void* dev_w, int64_t out, int64_t in, const float* dev_x, int64_t ldx, int T,
                       float* dev_y, int64_t ldy, Stream stream = nullptr);
// A version another library offers (the lab's, lab/bf16_gemm_lab.h): bf16_gemm_versions() and
// bf16_gemm_version() offer it after add_bf16_gemm_versions; numbers already known are skipped.
struct Bf16GemmVersion {
  int number;
  const char* what;
  int min_cc_major;
  void (*run)(const void* w, int64_t out, int64_t in, const float* x, int64_t ldx, int T, float* y, int64_t ldy,
              Stream s);
};
void add_bf16_gemm_versions(const Bf16GemmVersion* versions, int count);

// y[t] = x[t] * (1 / sqrt(mean(x[t]^2) + eps)) * w, per row of n. w is BF16 bits or fp32.
enum class WeightType { BF16, F32 };
void rmsnorm(const float* dev_x, int64_t ldx, const void* dev_w, WeightType wtype, int64_t n, int T, float eps,
             float* dev_y, int64_t ldy, Stream stream = nullptr);

// ---- Routed experts (MXFP4, compressed-tensors mxfp4-pack-quantized) ---------------------------

// One expert's six tensors in device memory: packed U8 [rows][cols/2] (low nibble = even column)
// and E8M0 scales U8 [rows][cols/32]. gate/up: [inter][latent]; down: [latent][inter].
struct MxExpert {
  const void* gate_packed = nullptr;
  const void* gate_scale = nullptr;
  const void* up_packed = nullptr;
  const void* up_scale = nullptr;
  const void* down_packed = nullptr;
  const void* down_scale = nullptr;
};

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
