#pragma once
// Generic host-side CUDA helpers shared by every CUDA forward (K3 here; a Qwen3 drafter can reuse
// them): error checks, owned streams and events, pinned host memory and a bump arena of device
// memory. Host C++ with the CUDA runtime header; nothing K3-specific lives here.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "cuda/cuda_kernels.h"

namespace deltafin::cuda {

// Throws CudaError naming the call and the runtime's message.
inline void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(err));
}

// Makes `device` the calling thread's current CUDA device for a scope, then restores the previous
// one: every call into a model or session of one GPU of several runs under one, so its allocations,
// streams and launches land on its own device whichever device the thread used before.
class DeviceScope {
 public:
  explicit DeviceScope(int device) : want_(device) {
    check_cuda(cudaGetDevice(&prev_), "cudaGetDevice");
    if (prev_ != want_) check_cuda(cudaSetDevice(want_), "cudaSetDevice");
  }
  ~DeviceScope() {
    if (prev_ != want_) cudaSetDevice(prev_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0, want_ = 0;
};

// Which of the device's stream priorities a stream gets: the block scheduler starts pending blocks of
// a higher-priority stream first, so work on a pass's critical path is not queued behind blocks of
// concurrent work that is needed later.
enum class StreamPriority { normal, high, low };

class OwnedStream {
 public:
  explicit OwnedStream(StreamPriority p = StreamPriority::normal) {
    int least = 0, greatest = 0;
    if (p != StreamPriority::normal)
      check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    const int prio = p == StreamPriority::high ? greatest : p == StreamPriority::low ? least : 0;
    check_cuda(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, prio), "cudaStreamCreateWithPriority");
  }
  ~OwnedStream() {
    if (s_) cudaStreamDestroy(s_);
  }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return s_; }
  Stream opaque() const { return static_cast<Stream>(s_); }
  void sync() const { check_cuda(cudaStreamSynchronize(s_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t s_ = nullptr;
};

class OwnedEvent {
 public:
  explicit OwnedEvent(bool timing = false) {
    check_cuda(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreate");
  }
  ~OwnedEvent() {
    if (e_) cudaEventDestroy(e_);
  }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { check_cuda(cudaEventRecord(e_, s), "cudaEventRecord"); }
  // A record that a stream capture keeps as a node of the graph, so every replay records the event
  // (a plain record inside a capture only orders the capture's streams); outside a capture, record().
  void record_in_graph(cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    check_cuda(cudaStreamIsCapturing(s, &st), "cudaStreamIsCapturing");
    if (st == cudaStreamCaptureStatusNone) return record(s);  // the flag is refused outside a capture
    check_cuda(cudaEventRecordWithFlags(e_, s, cudaEventRecordExternal), "cudaEventRecordWithFlags");
  }
  void sync() const { check_cuda(cudaEventSynchronize(e_), "cudaEventSynchronize"); }
  // Milliseconds from `start` to this event (both recorded with timing on).
  float since(const OwnedEvent& start) const {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start.e_, e_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

// Host memory someone else owns, page-locked for as long as this lives (cudaHostRegister): copies
// from it run at the pinned rate without a second copy. ok() is false where the system refused.
class HostRegistration {
 public:
  HostRegistration() = default;
  HostRegistration(const void* p, size_t bytes) {
    if (cudaHostRegister(const_cast<void*>(p), bytes, cudaHostRegisterDefault) == cudaSuccess) p_ = p;
    else cudaGetLastError();  // not sticky: clear it so later checks do not report it
  }
  ~HostRegistration() {
    if (p_) cudaHostUnregister(const_cast<void*>(p_));
  }
  HostRegistration(HostRegistration&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  HostRegistration& operator=(HostRegistration&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  bool ok() const { return p_ != nullptr; }

 private:
  const void* p_ = nullptr;
};

// Page-locked host memory: the only kind cudaMemcpyAsync copies without a hidden staging copy.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    check_cuda(cudaMallocHost(&p_, bytes ? bytes : 1), "cudaMallocHost");
  }
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  template <class T = uint8_t>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t size() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// One cudaMalloc carved into 256-byte aligned pieces; everything is freed together.
// Plan with reserve() (sizes only), then allocate() once, then take() the pieces in the same order.
class DeviceArena {
 public:
  static constexpr size_t kAlign = 256;
  static size_t round(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
  void reserve(size_t bytes) { planned_ += round(bytes); }
  void allocate() { buf_ = DeviceBuffer(planned_ ? planned_ : kAlign); }
  void* take(size_t bytes) {
    const size_t n = round(bytes);
    if (used_ + n > buf_.size()) throw CudaError("DeviceArena: more taken than reserved");
    void* p = static_cast<uint8_t*>(buf_.data()) + used_;
    used_ += n;
    return p;
  }
  template <class T>
  T* take_n(size_t count) {
    return static_cast<T*>(take(count * sizeof(T)));
  }
  size_t bytes() const { return buf_.size(); }

 private:
  DeviceBuffer buf_;
  size_t planned_ = 0, used_ = 0;
};

}  // namespace deltafin::cuda
