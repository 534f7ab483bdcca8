#pragma once
// The placement flags shared by `plan`, `run` and `bench` (budgets, rates, probing), and the plan
// they give for a model folder.
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "deltafin/placement.h"

namespace deltafin::cli {

// The engine's PlacementOptions (deltafin/placement.h) as command-line flags.
struct PlanFlags : PlacementOptions {
  void add_budget_options(CLI::App* cmd);  // --vram-budget, --ram-budget
  void add_rate_options(CLI::App* cmd);    // --disk-gbps ... --reprobe, --other-machine, --context
  // Probes (or reads the cache), measures free memory, applies the flags, plans.
  placement::Plan make(const std::string& model_root, const std::function<void(const std::string&)>& say = {}) const {
    return make_placement_plan(*this, model_root, say);
  }
};

}  // namespace deltafin::cli
