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
// and E8M0 scales U8 [rows][cols/32]. gate/up: [inter][latent]; down: [latent][inter]. The K3
// forward's fp64 kernels take them (cuda/k3/k3_ops.h, k3::routed_experts); the fp32 expert MLP
// that took them before, ExpertMlp, is the lab's (cuda/lab/expert_mlp.h).
struct MxExpert {
  const void* gate_packed = nullptr;
  const void* gate_scale = nullptr;
  const void* up_packed = nullptr;
  const void* up_scale = nullptr;
  const void* down_packed = nullptr;
  const void* down_scale = nullptr;
};

}  // namespace deltafin::cuda
