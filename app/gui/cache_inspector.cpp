#include "cache_inspector.h"

#include <numeric>
#include <vector>

#include "base/error.h"
#include "runtime/decode_session.h"
#include "store/stream_expert_source.h"
#include "store/tiered_expert_source.h"

namespace deltafin::gui {
namespace {
StreamExpertSource* asStream(ExpertSource& source) { return dynamic_cast<StreamExpertSource*>(&source); }
}  // namespace

int CacheSnapshot::count(int layer, ExpertTier t) const {
  int n = 0;
  for (int e = 0; e < experts; ++e) n += tier(layer, e) == t;
  return n;
}

namespace {

// The host source's tiers: the RAM expert cache, a stream cache, or every expert on local disk.
CacheSnapshot hostSnapshot(ExpertSource& source, int layers, int experts) {
  CacheSnapshot s;
  s.source = QString::fromStdString(source.describe());
  s.layers = layers;
  s.experts = experts;
  s.tiers.fill(ExpertTier::Disk, layers * experts);
  if (auto* tiered = dynamic_cast<TieredExpertSource*>(&source)) {
    s.ramTier = true;
    const HeatMap& heat = tiered->heat();
    const bool counted = heat.layers() == layers && heat.experts() == experts;
    if (counted) s.uses.fill(0, layers * experts);
    for (int l = 0; l < layers; ++l)
      for (int e = 0; e < experts; ++e) {
        const int i = l * experts + e;
        if (counted) s.uses[i] = heat.count(l, e);
        if (tiered->cached(l, e)) s.tiers[i] = ExpertTier::Ram;
      }
    s.bytesPerExpert = tiered->slot_bytes();
    s.capBytes = tiered->slot_count() * tiered->slot_bytes();
    s.cachedExperts = s.count(ExpertTier::Ram);
    s.cachedBytes = static_cast<quint64>(s.cachedExperts) * tiered->slot_bytes();
    return s;
  }
  StreamExpertSource* stream = asStream(source);
  if (!stream) return s;
  s.stream = true;
  s.tiers.fill(ExpertTier::Network);
  s.lastUse.fill(0, layers * experts);
  for (const StreamExpertSource::CachedExpert& e : stream->list()) {
    if (e.layer < 0 || e.layer >= layers || e.expert < 0 || e.expert >= experts) continue;
    s.lastUse[e.layer * experts + e.expert] = std::max<quint64>(1, e.last_use);
    s.tiers[e.layer * experts + e.expert] = ExpertTier::Disk;
    s.bytesPerExpert = std::max<quint64>(s.bytesPerExpert, e.bytes);
  }
  s.cachedBytes = stream->cached_bytes();
  s.capBytes = stream->cap_bytes();
  s.cachedExperts = static_cast<int>(stream->cached_experts());
  for (const auto& shard : stream->shard_integrity()) {
    ++s.shards;
    if (shard.verified) ++s.verifiedShards;
    else s.unverifiedBytes += shard.present_bytes;
  }
  return s;
}

}  // namespace

CacheSnapshot snapshotCache(ExpertSource& source, int layers, int experts, const VramTierStats* vram) {
  CacheSnapshot s = hostSnapshot(source, layers, experts);
  if (!vram) return s;
  // The fastest tier that holds an expert is where a lookup finds it: VRAM over the host's copy.
  s.vramTier = true;
  s.allInVram = vram->all_resident;
  s.vramSlots = vram->slot_count;
  if (s.allInVram) {
    s.tiers.fill(ExpertTier::Vram);
    return s;
  }
  for (const auto& [layer, expert] : vram->resident)
    if (layer >= 0 && layer < layers && expert >= 0 && expert < experts)
      s.tiers[layer * experts + expert] = ExpertTier::Vram;
  return s;
}

void warmLayer(ExpertSource& source, int layer, int experts) {
  StreamExpertSource* stream = asStream(source);
  if (!stream) throw Error("this install keeps every expert on disk", "warming applies to streaming installs only");
  std::vector<int> ids(static_cast<size_t>(experts));
  std::iota(ids.begin(), ids.end(), 0);
  stream->warm(layer, ids);
}

quint64 evictTo(ExpertSource& source, quint64 targetBytes) {
  StreamExpertSource* stream = asStream(source);
  if (!stream) throw Error("this install keeps every expert on disk", "eviction applies to streaming installs only");
  return stream->evict_to(targetBytes);
}

}  // namespace deltafin::gui
