#include "store/expert_source_factory.h"

#include "store/mmap_expert_source.h"
#include "store/stream_expert_source.h"
#include "store/tiered_expert_source.h"

namespace deltafin {

std::unique_ptr<ExpertSource> make_expert_source(const Checkpoint& ck, const std::string& model_root,
                                                 std::vector<std::vector<ExpertLocation>> locations,
                                                 const StoreOptions* store) {
  if (StreamMarker::find(model_root))
    return std::make_unique<StreamExpertSource>(ck, std::move(locations), model_root, StreamCacheOptions::from_env());
  if (store) return std::make_unique<TieredExpertSource>(ck, std::move(locations), *store);
  return std::make_unique<MmapExpertSource>(ck, std::move(locations));
}

}  // namespace deltafin
