#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "store/tiered_expert_source.h"

namespace deltafin::cli {

// "1,2,3" -> {1, 2, 3}; throws Error naming the bad element.
std::vector<int32_t> parse_ids(const std::string& text);
std::string ids_json(const std::vector<int32_t>& ids);
// Applies --threads to the global pool (0 = all cores).
void apply_threads(int threads);
// The model folder used when --model-root is not given.
std::string default_model_root();

// `--device cpu|cuda` for the commands that run the K3 forward (deltafin/backend.h's wants_cuda
// says whether this build can).
void add_device_option(CLI::App* cmd, std::string& device);

// The RAM expert tier's command-line flags (run, bench arms), turned into StoreOptions in one place.
struct StoreFlags {
  double ram_gb = 0;
  std::string policy = "lfu", io = "uring", heat;
  bool no_prefetch = false, page_cache = false, no_lock = false;
  std::string guess_budget = "auto";  // auto | all | MB per layer
  int qd = 0;                         // reads in flight; 0 = the disk's probed best depth
  StoreOptions options() const;       // throws Error for an unknown policy
};

}  // namespace deltafin::cli
