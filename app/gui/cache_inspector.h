#pragma once
// The one file between the cache browser and the engine's stream cache (store/): a snapshot of
// which experts are cached, and the warm/evict actions. Called on the engine thread, which owns
// the expert source.
#include <QMetaType>
#include <QString>
#include <QVector>

namespace deltafin {
class ExpertSource;
}

namespace deltafin::gui {

struct CacheSnapshot {
  bool stream = false;      // a stream install with an expert cache
  QString source;           // the expert source's own description
  int layers = 0, experts = 0;
  QVector<quint64> lastUse;  // [layer * experts + expert]; 0 = not cached, larger = used more recently
  quint64 cachedBytes = 0, capBytes = 0, bytesPerExpert = 0;
  int cachedExperts = 0;
  // Shards checked against the Hub's SHA-256 (each is checked when its last byte arrives).
  int shards = 0, verifiedShards = 0;
  quint64 unverifiedBytes = 0;  // bytes on disk in shards not yet checked

  bool cached(int layer, int expert) const { return lastUse.value(layer * experts + expert) != 0; }
};

CacheSnapshot snapshotCache(ExpertSource& source, int layers, int experts);
// Fetches every expert of `layer` into the cache; throws deltafin::Error (e.g. offline).
void warmLayer(ExpertSource& source, int layer, int experts);
// Evicts least recently used experts until at most `targetBytes` are cached; returns bytes freed.
quint64 evictTo(ExpertSource& source, quint64 targetBytes);

}  // namespace deltafin::gui

Q_DECLARE_METATYPE(deltafin::gui::CacheSnapshot)
