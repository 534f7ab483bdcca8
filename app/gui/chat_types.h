#pragma once
// Plain value types that cross the GUI/engine thread boundary through queued signals.
#include <QList>
#include <QMetaType>
#include <QString>

namespace deltafin::gui {

struct ChatTurn {
  QString role;       // "system", "user" or "assistant"
  QString content;
  QString reasoning;  // assistant only
};

struct GenerationRequest {
  quint64 id = 0;
  QList<ChatTurn> turns;
  bool thinking = false;
  int maxNewTokens = 256;
  double temperature = 0.0;
  quint64 seed = 0;
};

struct GenerationStats {
  int promptTokens = 0;
  int newTokens = 0;
  double firstTokenSeconds = 0;      // request start to first token
  double decodeTokensPerSecond = 0;
  double prefillTokensPerSecond = 0;
  double totalSeconds = 0;
  bool stoppedByUser = false;
};

// Expert lookups since the model was loaded, by the tier that served them.
struct CacheCounters {
  quint64 requests = 0;
  quint64 vramHits = 0;
  quint64 ramHits = 0;
  quint64 diskReads = 0;
  quint64 netFetches = 0;
  bool hasVram = false;
};

struct BackendInfo {
  QString name;            // "CPU", "CUDA", "Remote"
  QString fallbackReason;  // empty unless a preferred backend could not be used
  QString modelName;
  QString modelRoot;
  bool isDemo = false;
};

}  // namespace deltafin::gui

Q_DECLARE_METATYPE(deltafin::gui::ChatTurn)
Q_DECLARE_METATYPE(deltafin::gui::GenerationRequest)
Q_DECLARE_METATYPE(deltafin::gui::GenerationStats)
Q_DECLARE_METATYPE(deltafin::gui::CacheCounters)
Q_DECLARE_METATYPE(deltafin::gui::BackendInfo)
