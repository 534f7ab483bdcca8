#pragma once
// The placement flags shared by `plan`, `run` and `bench` (budgets, rates, probing), and the plan
// they give for a model folder.
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "placement/planner.h"

namespace deltafin::cli {

struct PlanFlags {
  std::string vram_budget;   // "24" or "32,32" (GB per GPU)
  double ram_budget_gb = 0;  // 0: free memory
  placement::BandwidthOverrides rates;
  bool reprobe = false, other_machine = false;
  int64_t context = 8192;
  bool use_gpus = true;      // false: plan for the CPU only (run --device cpu)

  void add_budget_options(CLI::App* cmd);  // --vram-budget, --ram-budget
  void add_rate_options(CLI::App* cmd);    // --disk-gbps ... --reprobe, --other-machine, --context
  // Probes (or reads the cache), measures free memory, applies the flags, plans.
  placement::Plan make(const std::string& model_root, const std::function<void(const std::string&)>& say = {}) const;
};

}  // namespace deltafin::cli
