#pragma once
#include <memory>
#include <string>
#include <vector>

#include "store/expert_source.h"

namespace deltafin {

class Checkpoint;

// Picks the expert source for a model folder: the in-place mmap source for a
// full install (stream installs and the tiered store plug in here).
std::unique_ptr<ExpertSource> make_expert_source(const Checkpoint& ck, const std::string& model_root,
                                                 std::vector<std::vector<ExpertLocation>> locations);

}  // namespace deltafin
