#pragma once
#include <string>

#include "runtime/generate.h"

namespace deltafin {

// Drafting and timing statistics of one generate() call as one line of JSON
// (`--stats`): proposed/accepted, passes by row count with their seconds.
std::string generate_stats_json(const GenerateStats& st, const std::string& draft_note);

}  // namespace deltafin
