#pragma once
#include <memory>
#include <string>
#include <vector>

#include "store/expert_source.h"

namespace deltafin {

class Checkpoint;

struct StoreOptions;

// Picks the expert source for a model folder: with `store` options, the tiered
// RAM cache over direct disk reads; otherwise the in-place mmap source (the
// page cache is the only cache). Stream installs plug in here too.
std::unique_ptr<ExpertSource> make_expert_source(const Checkpoint& ck, const std::string& model_root,
                                                 std::vector<std::vector<ExpertLocation>> locations,
                                                 const StoreOptions* store = nullptr);

}  // namespace deltafin
