#pragma once
// The placement options (RAM and VRAM budgets, assumed rates) and the plan they give for a model
// folder: what `deltafin plan` prints and what the engine executes when it loads under a budget.
#include <cstdint>
#include <functional>
#include <string>

#include "placement/planner.h"

namespace deltafin {

struct PlacementOptions {
  std::string vram_budget;   // "24" or "32,32" (GB per GPU); empty: free VRAM
  double ram_budget_gb = 0;  // 0: free memory less a safety margin
  placement::BandwidthOverrides rates;
  bool reprobe = false;        // measure the rates again instead of reading their cache
  bool other_machine = false;  // plan for a machine the options describe: nothing checked or measured here
  int64_t context = 8192;      // tokens of context each session reserves memory for
  bool use_gpus = true;        // false: plan for the CPU only
  bool probe = true;           // false: the cached rates, else the assumed desktop; nothing measured
  // A CPU run without budgets loads the spine where a plan under free memory puts it (in engine RAM
  // in huge pages, the remainder streamed from disk); true: read it in place through the page cache
  // instead (starts at once, decodes slower).
  bool map_spine = false;

  bool has_budget() const { return ram_budget_gb > 0 || !vram_budget.empty(); }
};

// Probes this machine (or reads the cached rates), applies the options and plans. `say` gets the
// progress and notes, one line each. Throws Error for a budget that cannot be met or checked.
placement::Plan make_placement_plan(const PlacementOptions& options, const std::string& model_root,
                                    const std::function<void(const std::string&)>& say = {});

}  // namespace deltafin
