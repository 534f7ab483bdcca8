#pragma once
// The one file between the cache browser and the engine's expert tiers (store/, and a GPU
// session's VRAM tier): a snapshot of where every expert is (VRAM, RAM, disk, not yet fetched) and how often it was
// used, and the warm/evict actions of a stream cache. Called on the engine thread, which owns the expert source.
#include <QMetaType>
#include <QString>
#include <QVector>

namespace deltafin {
class ExpertSource;
struct VramTierStats;
}  // namespace deltafin

namespace deltafin::gui {

// Where one expert is now, fastest first. Network: a streaming install has not fetched it yet.
enum class ExpertTier : quint8 { Vram, Ram, Disk, Network };

struct CacheSnapshot {
  bool stream = false;     // a stream install with an expert cache
  bool ramTier = false;    // the engine's RAM expert cache (a full install with --ram-cache)
  bool vramTier = false;   // a GPU session's VRAM expert tier: some experts in its slots, or every one
  bool allInVram = false;  // every expert of the model resident in VRAM
  int vramSlots = 0;       // the VRAM tier's expert slots (a partial tier)
  QString source;          // the expert source's own description
  int layers = 0, experts = 0;
  QVector<quint64> lastUse;  // [layer * experts + expert]; 0 = not cached, larger = used more recently
  // [layer * experts + expert], filled for every install kind.
  QVector<ExpertTier> tiers;
  // How often each expert was looked up, where the expert source counts it (the RAM tier's heat
  // map); empty when it does not (then lastUse, where there is one, stands for it).
  QVector<quint32> uses;
  quint64 cachedBytes = 0, capBytes = 0, bytesPerExpert = 0;
  int cachedExperts = 0;
  // Shards checked against the Hub's SHA-256 (each is checked when its last byte arrives).
  int shards = 0, verifiedShards = 0;
  quint64 unverifiedBytes = 0;  // bytes on disk in shards not yet checked

  bool cached(int layer, int expert) const { return lastUse.value(layer * experts + expert) != 0; }
  ExpertTier tier(int layer, int expert) const { return tiers.value(layer * experts + expert, ExpertTier::Disk); }
  int count(ExpertTier t) const { return static_cast<int>(tiers.count(t)); }
  int count(int layer, ExpertTier t) const;
};

// `vram`: the GPU session's VRAM tier, if there is one: its resident experts are drawn in VRAM
// (over the RAM or disk tier the host source has them in), or all of them when all are resident.
CacheSnapshot snapshotCache(ExpertSource& source, int layers, int experts, const VramTierStats* vram = nullptr);
// Fetches every expert of `layer` into the cache; throws deltafin::Error (e.g. offline).
void warmLayer(ExpertSource& source, int layer, int experts);
// Evicts least recently used experts until at most `targetBytes` are cached; returns bytes freed.
quint64 evictTo(ExpertSource& source, quint64 targetBytes);

}  // namespace deltafin::gui

Q_DECLARE_METATYPE(deltafin::gui::CacheSnapshot)
