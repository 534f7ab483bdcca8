#pragma once
// The engine side of the app: lives on LocalEngine's QThread, owns the engine (deltafin::Engine:
// model, tokenizer, device, drafter) and its session, and reports through queued signals. Generated text leaves in
// chunks at most every kChunkInterval, so a fast decoder cannot flood the GUI thread's event queue.
#include <QObject>

#include <atomic>
#include <chrono>
#include <memory>

#include "bench_types.h"
#include "cache_inspector.h"
#include "chat_types.h"

namespace deltafin {
class DecodeSession;
class Engine;
}  // namespace deltafin

namespace deltafin::gui {

class LocalEngineWorker : public QObject {
  Q_OBJECT
 public:
  static constexpr std::chrono::milliseconds kChunkInterval{33};
  // Tokens a GPU session holds (its MLA caches are allocated for this many up front): a whole
  // chat, history included, since every reply re-reads it.
  static constexpr int64_t kGpuContextTokens = 32768;
  // How often a reply reports where the experts are while it runs (when someone looks).
  static constexpr std::chrono::milliseconds kSnapshotInterval{500};

  LocalEngineWorker();
  ~LocalEngineWorker() override;

  // Thread-safe: called from the GUI thread. A stop requested before the queued request
  // is picked up still applies to it, so clearStop() comes from the sender, not the worker.
  void requestStop() { stop_.store(true); }
  void clearStop() { stop_.store(false); }
  // Thread-safe: while on, a reply emits cacheSnapshot() and countersChanged() as it runs.
  void setLiveSnapshots(bool on) { liveSnapshots_.store(on); }

 public slots:
  void load(const QString& modelRoot, bool isDemo, const deltafin::gui::EngineOptions& options);
  // Swaps the drafter without reloading the model; reports through loaded().
  void setDrafter(const QString& drafter);
  void generate(const deltafin::gui::GenerationRequest& request);
  void runBench(const deltafin::gui::BenchArm& arm);
  void inspectCache();
  void warmCacheLayer(int layer);
  void evictCache(quint64 targetBytes);

 signals:
  void loaded(const deltafin::gui::BackendInfo& info);
  void loadFailed(const QString& whatFailed, const QString& whatToDo);
  void loadNote(const QString& note);  // the engine's notes while loading (the spine's progress)
  void chunk(quint64 id, const QString& reasoning, const QString& answer);
  void toolCall(quint64 id, const deltafin::gui::ToolCallInfo& call);
  void finished(quint64 id, const deltafin::gui::GenerationStats& stats);
  void failed(quint64 id, const QString& whatFailed, const QString& whatToDo);
  void countersChanged(const deltafin::gui::CacheCounters& counters);
  void benchProgress(const QString& arm, int run, int runs);
  void benchResult(const deltafin::gui::BenchResult& result);
  void benchFailed(const QString& arm, const QString& whatFailed, const QString& whatToDo);
  void cacheSnapshot(const deltafin::gui::CacheSnapshot& snapshot);
  void cacheActionDone(const QString& message);
  void cacheActionFailed(const QString& whatFailed, const QString& whatToDo);

 private:
  void emitCounters();
  void emitSnapshot();
  void describeDrafter(const QString& drafter);

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<DecodeSession> session_;  // on the GPU when Settings allow it and one is usable
  BackendInfo info_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> liveSnapshots_{false};
};

}  // namespace deltafin::gui
