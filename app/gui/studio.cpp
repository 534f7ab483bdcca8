#include "studio.h"

#include <QFileInfo>
#include <QStandardPaths>
#include <QThread>
#include <QUrl>

#include "app_paths.h"
#include "device_choice.h"
#include "job_manager.h"
#include "local_engine.h"
#include "remote_chat_backend.h"
#include "server_process.h"

namespace deltafin::gui {

Studio::Studio(Options options, QObject* parent)
    : QObject(parent), override_(options.modelRoot), dataDir_(options.dataDir) {
  settings_ = StudioSettings::load(settingsFile());
  registerMetaTypes();
  qRegisterMetaType<DiskUsage>();
  conversations_ = new ConversationStore(dataPath(QStringLiteral("conversations.json")), this);
  engine_ = new LocalEngine(this);
  remote_ = new RemoteChatBackend(this);
  jobs_ = new JobManager(dataPath(QStringLiteral("jobs.json")), this);
  server_ = new ServerProcess(this);
  // A finished install changes what the engine should load and what the disk holds.
  connect(jobs_, &JobManager::jobChanged, this, [this](InstallJob* job) {
    if (job->state() != InstallJob::State::Done || job->isUpgrade()) return;
    refreshDiskUsage();
    if (hasModel(modelRoot()) && activeModelRoot() != loadedRoot_) {
      startEngine();
    } else if (!job->request().k3 && engine_->isReady() &&
               QFileInfo(job->request().modelRoot) == QFileInfo(loadedRoot_)) {
      // New drafters next to the loaded model: look for them again without reloading K3.
      engine_->setDrafter(loadedOptions_.drafter);
    }
  });
  if (settings_.remoteEnabled)
    remote_->setEndpoint(QUrl(settings_.remoteUrl), settings_.remoteModel, settings_.remoteApiKey);
}

Studio::~Studio() {
  if (scanThread_) scanThread_->wait();
}

void Studio::saveSettings() { settings_.save(settingsFile()); }

QString Studio::dataPath(const QString& name) const {
  const QString dir = dataDir_.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) : dataDir_;
  return dir + QLatin1Char('/') + name;
}

QString Studio::settingsFile() const {
  return dataDir_.isEmpty() ? QString() : dataDir_ + QStringLiteral("/settings.ini");
}

ChatBackend* Studio::chatBackend() const {
  if (settings_.remoteEnabled) return remote_;
  return engine_;
}

QString Studio::modelRoot() const {
  if (!override_.isEmpty()) return override_;
  return settings_.modelFolder.isEmpty() ? defaultModelRoot() : settings_.modelFolder;
}

bool Studio::usingDemo() const {
  if (!override_.isEmpty()) return false;
  return !hasModel(modelRoot()) && settings_.useDemo && !bundledDemoModel().isEmpty();
}

QString Studio::activeModelRoot() const {
  if (usingDemo()) return bundledDemoModel();
  return modelRoot();
}

bool Studio::needsFirstRun() const {
  return override_.isEmpty() && !hasModel(modelRoot()) && !settings_.useDemo && !settings_.remoteEnabled;
}

void Studio::startEngine() {
  const QString root = activeModelRoot();
  const EngineOptions options = settings_.engineOptions();
  if (root == loadedRoot_ && engine_->isReady()) {
    if (options == loadedOptions_) return;
    if (options.sameModelSetup(loadedOptions_)) {
      loadedOptions_ = options;
      engine_->setDrafter(options.drafter);
      return;
    }
  }
  loadedRoot_ = root;
  loadedOptions_ = options;
  engine_->load(root, usingDemo(), options);
  refreshDiskUsage();
}

void Studio::useDemoModel() {
  settings_.useDemo = true;
  saveSettings();
  startEngine();
}

void Studio::applySettings() {
  saveSettings();
  if (settings_.remoteEnabled)
    remote_->setEndpoint(QUrl(settings_.remoteUrl), settings_.remoteModel, settings_.remoteApiKey);
  startEngine();
  applyServerSetting();
  emit chatBackendChanged(chatBackend());
}

void Studio::applyServerSetting() {
  if (!settings_.serverEnabled) {
    server_->stop();
    return;
  }
  // The server computes where the chat does (Settings' device, resolved the same way).
  const QString device = resolveDevice(settings_.device).name.toLower();
  // A running server with another model, port or device is restarted with the new ones.
  if (server_->isRunning() && (server_->modelRoot() != activeModelRoot() || server_->port() != settings_.serverPort ||
                               server_->device() != device))
    server_->restart(activeModelRoot(), settings_.serverPort, device);
  else if (!server_->isRunning()) server_->start(activeModelRoot(), settings_.serverPort, device);
}

void Studio::refreshDiskUsage() {
  if (scanning_) return;
  scanning_ = true;
  const QString root = modelRoot();
  // Walking a 1.5 TB install touches thousands of inodes: never on the GUI thread.
  QThread* t = QThread::create([this, root] {
    const DiskUsage u = scanDiskUsage(root);
    QMetaObject::invokeMethod(
        this,
        [this, u] {
          scanning_ = false;
          diskUsage_ = u;
          emit diskUsageChanged(u);
        },
        Qt::QueuedConnection);
  });
  connect(t, &QThread::finished, t, &QObject::deleteLater);
  scanThread_ = t;
  t->start();
}

}  // namespace deltafin::gui
