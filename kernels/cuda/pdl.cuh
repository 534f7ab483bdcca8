#pragma once
// Programmatic dependent launch (sm_90 and later): a kernel launched with launch() may start while the one before it
// on the stream still runs. Every such kernel calls pdl_wait() before it touches memory another kernel wrote or
// reads (a prologue may prefetch weights), and waits before it ends, so "finished" keeps its meaning. The bits are
// the same with DELTAFIN_CUDA_PDL=off (docs/CUDA.md "The forward", Programmatic dependent launch).
#include <cuda_runtime.h>

#include <utility>

namespace deltafin::cuda {

// Blocks until every kernel this one depends on has finished and its writes are visible; returns at
// once when the kernel was launched without the attribute.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The next kernel on the stream may start once every block of this one has called this (or ended).
// Called right after pdl_wait(), so at most two kernels wait on one running kernel.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Every kernel of the forward starts with this.
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_launch_dependents();
}

// True on sm_90+ devices unless DELTAFIN_CUDA_PDL=off (for measuring and for ruling it out).
bool pdl_enabled();

// Fills `attr` with the launch attributes that PDL needs; returns how many.
int pdl_attributes(cudaLaunchAttribute* attr);

// kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream serialization where
// pdl_enabled(). The kernel must start with pdl_enter() (or pdl_wait()).
template <typename... P, typename... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  cfg.attrs = attr;
  cfg.numAttrs = static_cast<unsigned>(pdl_attributes(attr));
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}

}  // namespace deltafin::cuda
