#include "store/expert_source_factory.h"

#include "store/mmap_expert_source.h"

namespace deltafin {

std::unique_ptr<ExpertSource> make_expert_source(const Checkpoint& ck, const std::string& model_root,
                                                 std::vector<std::vector<ExpertLocation>> locations) {
  return std::make_unique<MmapExpertSource>(ck, std::move(locations));
}

}  // namespace deltafin
