// Device discovery, errors and owned device memory.
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cuda/cuda_common.cuh"

namespace deltafin::cuda {

void throw_cuda(cudaError_t err, const char* what, const char* file, int line) {
  throw CudaError(std::string("CUDA call failed: ") + what + " -> " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line) +
                  "; check that an NVIDIA driver matching CUDA " + std::to_string(CUDART_VERSION / 1000) +
                  " is installed and the GPU is not in use by another process");
}

bool device_available(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error so later calls can report their own
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device present";
    return false;
  }
  return true;
}

DeviceInfo device_info() {
  int dev = 0;
  DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  DELTAFIN_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  DeviceInfo d;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  DELTAFIN_CUDA_CHECK(cudaMemGetInfo(&d.free_bytes, &d.total_bytes));
  DELTAFIN_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  DELTAFIN_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("DELTAFIN_CUDA_PDL");
    if (e && std::string(e) == "off") return false;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return major >= 9;
  }();
  return on;
}

int pdl_attributes(cudaLaunchAttribute* attr) {
  if (!pdl_enabled()) return 0;
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  return 1;
}

void synchronize() { DELTAFIN_CUDA_CHECK(cudaDeviceSynchronize()); }

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes) DELTAFIN_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

static void check_range(size_t offset, size_t bytes, size_t size) {
  if (offset > size || bytes > size - offset)
    throw CudaError("device buffer access of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                    " is outside the buffer of " + std::to_string(size) +
                    " bytes (a caller bug: size the buffer first)");
}

void DeviceBuffer::upload(const void* src, size_t bytes, size_t offset) {
  check_range(offset, bytes, bytes_);
  if (bytes) DELTAFIN_CUDA_CHECK(cudaMemcpy(static_cast<char*>(ptr_) + offset, src, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* dst, size_t bytes, size_t offset) const {
  check_range(offset, bytes, bytes_);
  if (bytes)
    DELTAFIN_CUDA_CHECK(cudaMemcpy(dst, static_cast<const char*>(ptr_) + offset, bytes, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::fill_byte(int value) {
  if (bytes_) DELTAFIN_CUDA_CHECK(cudaMemset(ptr_, value, bytes_));
}

}  // namespace deltafin::cuda
