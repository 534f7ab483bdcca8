// A quarter of the lab's fp64 GEMV variants (every kParts-th of kVariants), so that the four compile in
// parallel.
#include "cuda/lab/gemm64_lab.cuh"

namespace deltafin::cuda::lab::gemm64 {

Launcher part2_launcher(int v) { return part_table<2>(v, std::make_integer_sequence<int, kCount>{}); }

}  // namespace deltafin::cuda::lab::gemm64
