#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deltafin::cli {

// "1,2,3" -> {1, 2, 3}; throws Error naming the bad element.
std::vector<int32_t> parse_ids(const std::string& text);
std::string ids_json(const std::vector<int32_t>& ids);
// Applies --threads to the global pool (0 = all cores).
void apply_threads(int threads);
// The model folder used when --model-root is not given.
std::string default_model_root();

}  // namespace deltafin::cli
