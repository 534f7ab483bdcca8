#pragma once
// `deltafin bench-verify --device cuda`: the GPU verify-pass table, in any build (a build without
// the CUDA backend throws the Error that says how to get it).
#include <string>
#include <vector>

namespace deltafin {

// The GPU verify-pass table (experts: "resident" or "streamed" = read from disk every pass), as Markdown.
std::string cuda_bench_verify(const std::string& root, const std::vector<int>& rows, int context, int reps,
                              const std::string& experts);

}  // namespace deltafin
