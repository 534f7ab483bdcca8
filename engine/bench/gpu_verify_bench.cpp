#include "bench/gpu_verify_bench.h"

#include <sstream>

#include "base/error.h"
// In CUDA builds this library links the CUDA backend, which defines DELTAFIN_HAVE_CUDA_K3.
#ifdef DELTAFIN_HAVE_CUDA_K3
#include "bench/k3_cuda_bench.h"
#endif

namespace deltafin {

std::string cuda_bench_verify(const std::string& root, const std::vector<int>& rows, int context, int reps,
                              const std::string& experts) {
#ifdef DELTAFIN_HAVE_CUDA_K3
  std::ostringstream out;
  cuda::bench_verify(root, rows, context, reps, experts == "streamed" ? "disk" : "resident", out);
  return out.str();
#else
  throw Error("this deltafin was built without the CUDA backend",
              "rebuild with -DDELTAFIN_CUDA=ON or use --device cpu");
#endif
}

}  // namespace deltafin
