#pragma once
// `--device cpu|cuda` for the commands that run the K3 forward. The CUDA paths exist only in
// builds with DELTAFIN_CUDA=ON; elsewhere choosing cuda is an error that says how to get it.
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deltafin {
class K3Model;
}

namespace deltafin::cli {

void add_device_option(CLI::App* cmd, std::string& device);
bool wants_cuda(const std::string& device);  // throws Error when cuda is asked for but not built
std::vector<int32_t> cuda_generate_ids(const K3Model& model, const std::vector<int32_t>& prompt, int max_new);
std::vector<float> cuda_all_logits(const K3Model& model, const std::vector<int32_t>& ids);
// The GPU verify-pass table (experts: resident or streamed = read from disk every pass), as Markdown.
std::string cuda_bench_verify(const std::string& root, const std::vector<int>& rows, int context, int reps,
                              const std::string& experts);

}  // namespace deltafin::cli
