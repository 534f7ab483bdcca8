#include "local_engine.h"

#include "local_engine_worker.h"

namespace deltafin::gui {

void registerMetaTypes() {
  qRegisterMetaType<ChatTurn>();
  qRegisterMetaType<ToolCallInfo>();
  qRegisterMetaType<GenerationRequest>();
  qRegisterMetaType<GenerationStats>();
  qRegisterMetaType<CacheCounters>();
  qRegisterMetaType<BackendInfo>();
  qRegisterMetaType<EngineOptions>();
  qRegisterMetaType<BenchArm>();
  qRegisterMetaType<BenchResult>();
  qRegisterMetaType<CacheSnapshot>();
}

LocalEngine::LocalEngine(QObject* parent) : ChatBackend(parent) {
  registerMetaTypes();
  worker_ = new LocalEngineWorker;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &LocalEngineWorker::loaded, this, [this](const BackendInfo& info) {
    info_ = info;
    ready_ = true;
    setBusy(false);
    emit ready(info);
  });
  connect(worker_, &LocalEngineWorker::loadFailed, this, [this](const QString& what, const QString& todo) {
    ready_ = false;
    setBusy(false);
    emit unavailable(what, todo);
  });
  connect(worker_, &LocalEngineWorker::loadNote, this, &LocalEngine::loadNote);
  connect(worker_, &LocalEngineWorker::chunk, this, &ChatBackend::chunk);
  connect(worker_, &LocalEngineWorker::toolCall, this, &ChatBackend::toolCall);
  connect(worker_, &LocalEngineWorker::finished, this, [this](quint64 id, const GenerationStats& s) {
    setBusy(false);
    emit finished(id, s);
  });
  connect(worker_, &LocalEngineWorker::failed, this, [this](quint64 id, const QString& what, const QString& todo) {
    setBusy(false);
    emit failed(id, what, todo);
  });
  connect(worker_, &LocalEngineWorker::countersChanged, this, &ChatBackend::countersChanged);
  connect(worker_, &LocalEngineWorker::benchProgress, this, &LocalEngine::benchProgress);
  connect(worker_, &LocalEngineWorker::benchResult, this, [this](const BenchResult& r) {
    setBusy(false);
    emit benchResult(r);
  });
  connect(worker_, &LocalEngineWorker::benchFailed, this,
          [this](const QString& arm, const QString& what, const QString& todo) {
            setBusy(false);
            emit benchFailed(arm, what, todo);
          });
  connect(worker_, &LocalEngineWorker::cacheSnapshot, this, &LocalEngine::cacheSnapshot);
  connect(worker_, &LocalEngineWorker::cacheActionDone, this, &LocalEngine::cacheActionDone);
  connect(worker_, &LocalEngineWorker::cacheActionFailed, this, &LocalEngine::cacheActionFailed);
  thread_.setObjectName(QStringLiteral("deltafin-engine"));
  thread_.start();
}

LocalEngine::~LocalEngine() {
  worker_->requestStop();
  thread_.quit();
  thread_.wait();
}

void LocalEngine::load(const QString& modelRoot, bool isDemo, const EngineOptions& options) {
  ready_ = false;
  setBusy(true);
  emit loading(modelRoot);
  QMetaObject::invokeMethod(worker_, "load", Qt::QueuedConnection, Q_ARG(QString, modelRoot), Q_ARG(bool, isDemo),
                            Q_ARG(deltafin::gui::EngineOptions, options));
}

void LocalEngine::setDrafter(const QString& drafter) {
  QMetaObject::invokeMethod(worker_, "setDrafter", Qt::QueuedConnection, Q_ARG(QString, drafter));
}

void LocalEngine::start(const GenerationRequest& request) {
  setBusy(true);
  worker_->clearStop();
  QMetaObject::invokeMethod(worker_, "generate", Qt::QueuedConnection,
                            Q_ARG(deltafin::gui::GenerationRequest, request));
}

void LocalEngine::stop() { worker_->requestStop(); }

void LocalEngine::runBench(const BenchArm& arm) {
  setBusy(true);
  worker_->clearStop();
  QMetaObject::invokeMethod(worker_, "runBench", Qt::QueuedConnection, Q_ARG(deltafin::gui::BenchArm, arm));
}

void LocalEngine::setLiveCacheUpdates(bool on) { worker_->setLiveSnapshots(on); }

void LocalEngine::requestCacheSnapshot() { QMetaObject::invokeMethod(worker_, "inspectCache", Qt::QueuedConnection); }

void LocalEngine::warmCacheLayer(int layer) {
  QMetaObject::invokeMethod(worker_, "warmCacheLayer", Qt::QueuedConnection, Q_ARG(int, layer));
}

void LocalEngine::evictCache(quint64 targetBytes) {
  QMetaObject::invokeMethod(worker_, "evictCache", Qt::QueuedConnection, Q_ARG(quint64, targetBytes));
}

void LocalEngine::setBusy(bool busy) {
  if (busy_ == busy) return;
  busy_ = busy;
  emit busyChanged(busy);
}

}  // namespace deltafin::gui
