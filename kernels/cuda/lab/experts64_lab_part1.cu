// A quarter of the lab's fp64 routed-expert variants (every kParts-th of kVariants), so that the four
// compile in parallel.
#include "cuda/lab/experts64_lab.cuh"

namespace deltafin::cuda::lab::experts64 {

Launcher part1_launcher(int v) { return part_table<1>(v, std::make_integer_sequence<int, kCount>{}); }

}  // namespace deltafin::cuda::lab::experts64
