// Linked only into trees without the stream cache (store/stream_*): every source is on disk.
#include "base/error.h"
#include "cache_inspector.h"
#include "store/expert_source.h"

namespace deltafin::gui {

CacheSnapshot snapshotCache(ExpertSource& source, int layers, int experts) {
  CacheSnapshot s;
  s.source = QString::fromStdString(source.describe());
  s.layers = layers;
  s.experts = experts;
  return s;
}

void warmLayer(ExpertSource&, int, int) {
  throw Error("this build has no streaming expert cache", "warming applies to streaming installs only");
}

quint64 evictTo(ExpertSource&, quint64) {
  throw Error("this build has no streaming expert cache", "eviction applies to streaming installs only");
}

}  // namespace deltafin::gui
