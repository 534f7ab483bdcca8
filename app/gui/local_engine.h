#pragma once
// The in-process engine as a ChatBackend: a LocalEngineWorker on its own QThread. The GUI thread
// never touches the model; it only sends requests and receives queued signals.
#include <QThread>

#include "bench_types.h"
#include "cache_inspector.h"
#include "chat_backend.h"

namespace deltafin::gui {

class LocalEngineWorker;

class LocalEngine : public ChatBackend {
  Q_OBJECT
 public:
  explicit LocalEngine(QObject* parent = nullptr);
  ~LocalEngine() override;

  void load(const QString& modelRoot, bool isDemo, const EngineOptions& options);
  void setDrafter(const QString& drafter);
  void start(const GenerationRequest& request) override;
  void stop() override;
  bool isReady() const override { return ready_; }
  BackendInfo info() const override { return info_; }
  bool isBusy() const { return busy_; }

  void runBench(const BenchArm& arm);
  void requestCacheSnapshot();
  // While on, a running reply reports cacheSnapshot() and countersChanged() twice a second.
  void setLiveCacheUpdates(bool on);
  void warmCacheLayer(int layer);
  void evictCache(quint64 targetBytes);

 signals:
  void loading(const QString& modelRoot);
  void loadNote(const QString& note);  // progress while loading, one line each
  void busyChanged(bool busy);
  void benchProgress(const QString& arm, int run, int runs);
  void benchResult(const deltafin::gui::BenchResult& result);
  void benchFailed(const QString& arm, const QString& whatFailed, const QString& whatToDo);
  void cacheSnapshot(const deltafin::gui::CacheSnapshot& snapshot);
  void cacheActionDone(const QString& message);
  void cacheActionFailed(const QString& whatFailed, const QString& whatToDo);

 private:
  void setBusy(bool busy);

  QThread thread_;
  LocalEngineWorker* worker_ = nullptr;  // lives on thread_, deleted when it finishes
  BackendInfo info_;
  bool ready_ = false;
  bool busy_ = false;
};

void registerMetaTypes();

}  // namespace deltafin::gui
