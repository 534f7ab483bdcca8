#pragma once
// Plain value types that cross the GUI/engine thread boundary through queued signals.
#include <QList>
#include <QMetaType>
#include <QString>

namespace deltafin::gui {

// One call of a tool the model made, as OpenAI's tool_calls entries carry it.
struct ToolCallInfo {
  QString id;         // the call's id (K3's format has none: the Studio or the server names it)
  QString name;       // the tool
  QString arguments;  // JSON text of an object, as the model wrote it

  bool operator==(const ToolCallInfo&) const = default;
};

struct ChatTurn {
  QString role;  // "system", "user", "assistant" or "tool"
  QString content;
  QString reasoning;              // assistant only
  QList<ToolCallInfo> toolCalls;  // assistant only: the calls it made
  QString toolCallId;             // tool only: the call this result answers
  QString toolName;               // tool only: the tool that answered
};

struct GenerationRequest {
  quint64 id = 0;
  QList<ChatTurn> turns;
  bool thinking = false;
  int maxNewTokens = 256;
  double temperature = 0.0;
  double topP = 1.0;
  quint64 seed = 0;
  QString effort;  // "", "low", "high", "max": the reasoning effort message ("" sends none)
};

struct GenerationStats {
  int promptTokens = 0;
  int newTokens = 0;
  double firstTokenSeconds = 0;  // request start to first token
  double decodeTokensPerSecond = 0;
  double prefillTokensPerSecond = 0;
  double totalSeconds = 0;
  bool stoppedByUser = false;
  // Speculative decoding: which drafter guessed, and how many of its guesses K3 accepted.
  QString drafter;  // empty: plain decoding
  int proposed = 0, accepted = 0;
  QString draftFallback;  // why drafting stopped during this reply, if it did
};

// What Settings ask of the local engine; applied when the model loads (the drafter also later).
struct EngineOptions {
  QString device = QStringLiteral("auto");  // "auto", "cpu", "cuda"
  bool ramCache = false;                    // engine-owned RAM expert cache over direct reads; else the page cache
  quint64 ramBudgetBytes = 0;               // 0: sized from free memory
  bool directIo = true;                     // the RAM cache reads with O_DIRECT, so the page cache holds no second copy
  QString policy = QStringLiteral("lfu");   // "lru", "lfu", "heat"
  QString drafter = QStringLiteral("auto");  // "auto", "off", "dspark", "qwen", "ngram"

  bool sameModelSetup(const EngineOptions& o) const {
    return device == o.device && ramCache == o.ramCache && ramBudgetBytes == o.ramBudgetBytes &&
           directIo == o.directIo && policy == o.policy;
  }
  bool operator==(const EngineOptions& o) const { return sameModelSetup(o) && drafter == o.drafter; }
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
  QString expertSource;  // the engine's description of where experts are read from
  QString drafter;       // the drafter in use ("" = plain decoding)
  QString drafterNote;   // which drafter was picked and from where, or why none
};

}  // namespace deltafin::gui

Q_DECLARE_METATYPE(deltafin::gui::ToolCallInfo)
Q_DECLARE_METATYPE(deltafin::gui::ChatTurn)
Q_DECLARE_METATYPE(deltafin::gui::GenerationRequest)
Q_DECLARE_METATYPE(deltafin::gui::GenerationStats)
Q_DECLARE_METATYPE(deltafin::gui::CacheCounters)
Q_DECLARE_METATYPE(deltafin::gui::BackendInfo)
Q_DECLARE_METATYPE(deltafin::gui::EngineOptions)
