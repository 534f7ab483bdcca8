// The lab's fp64 GEMV variants: the table's host side (names, what fits, scratch) and the dispatch to
// the part that instantiates each (gemm64_lab_part<P>.cu).
#include <cstdio>
#include <stdexcept>

#include "cuda/lab/gemm64_lab.cuh"

namespace deltafin::cuda::lab {

using gemm64::kVariants;

int gemm64_lab_count() { return gemm64::kCount; }

Gemm64Params gemm64_lab_params(int v) {
  if (v < 0 || v >= gemm64::kCount) throw std::out_of_range("gemm64_lab: no such variant");
  return kVariants[v];
}

std::string gemm64_lab_name(int v) {
  const Gemm64Params p = gemm64_lab_params(v);
  char b[64];
  std::snprintf(b, sizeof b, "s%dr%dm%dd%dx%da%dk%dp%d", p.ws, p.rw, p.mt, p.d, p.xm, p.acc, p.ks, p.pf);
  return b;
}

bool gemm64_lab_applies(int v, int T, int64_t in) {
  const Gemm64Params p = gemm64_lab_params(v);
  if (!p.nt2 && T > 8) return false;
  if (p.xm != 2) return true;
  static const int optin = [] {
    int dev = 0, bytes = 0;
    DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
    DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return bytes;
  }();  // one device per process (the bench's)
  return gemm64::smem_bytes(p, T <= 8 ? 1 : 2, T, in) <= size_t(optin);
}

int64_t gemm64_lab_scratch(int v, int64_t out, int T) {
  const Gemm64Params p = gemm64_lab_params(v);
  return p.ks > 1 ? int64_t(p.ks) * T * out : 0;
}

int64_t gemm64_lab_counters(int v, int64_t out) {
  const Gemm64Params p = gemm64_lab_params(v);
  const int64_t rows = int64_t(8) * p.mt * p.rw;
  return p.ks > 1 ? (out + rows - 1) / rows : 0;
}

void gemm64_lab(int v, const uint16_t* w, int64_t out, int64_t in, const double* x, int64_t ldx, int T, double* y,
                int64_t ldy, double* scratch, unsigned* counters, cudaStream_t s) {
  if (T <= 0) return;
  if (!gemm64_lab_applies(v, T, in)) throw std::invalid_argument("gemm64_lab: variant does not fit this T");
  const gemm64::Args a{w,
                       out,
                       in,
                       in % 8 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0,
                       ldx % 2 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0,
                       x,
                       ldx,
                       T,
                       y,
                       ldy,
                       scratch,
                       counters};
  gemm64::Launcher f = nullptr;
  switch (v % gemm64::kParts) {
    case 0:
      f = gemm64::part0_launcher(v);
      break;
    case 1:
      f = gemm64::part1_launcher(v);
      break;
    case 2:
      f = gemm64::part2_launcher(v);
      break;
    default:
      f = gemm64::part3_launcher(v);
      break;
  }
  f(a, s);
}

}  // namespace deltafin::cuda::lab
