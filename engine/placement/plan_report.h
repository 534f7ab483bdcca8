#pragma once
// A plan as text: the table of where each range of units lives and runs, and the one-line summary
// that `deltafin plan`, `run --stats` and `bench` print.
#include <string>

#include "placement/planner.h"

namespace deltafin::placement {

std::string plan_table(const Plan& p);    // several lines, one per range of like units
std::string plan_summary(const Plan& p);  // one line
std::string plan_rates(const Plan& p);    // the rates used and where they came from, one line
std::string plan_json(const Plan& p);

}  // namespace deltafin::placement
