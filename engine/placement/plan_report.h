#pragma once
// A plan as text: the table of where each range of units lives and runs, and the one-line summary
// that `deltafin plan`, `run --stats` and `bench` print.
#include <string>

#include "placement/planner.h"

namespace deltafin::placement {

std::string plan_table(const Plan& p);  // the GPUs (plan_gpus), then one line per range of like units
// One line per GPU: its index and name, its budget, the layer range (and lm_head) in its VRAM, the
// units it streams and its expert tier; "" without GPUs.
std::string plan_gpus(const Plan& p);
std::string plan_summary(const Plan& p);  // one line
std::string plan_rates(const Plan& p);    // the rates used and where they came from, one line
std::string plan_json(const Plan& p);

}  // namespace deltafin::placement
