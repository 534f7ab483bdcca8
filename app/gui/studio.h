#pragma once
// The app's long-lived state, independent of any window: settings, conversations, the local
// engine thread, the remote backend, background jobs. Windows come and go (a language switch
// rebuilds the main window); this stays.
#include <QObject>
#include <QPointer>
#include <QThread>

#include "conversation_store.h"
#include "disk_usage.h"
#include "studio_settings.h"

namespace deltafin::gui {

class ChatBackend;
class JobManager;
class LocalEngine;
class RemoteChatBackend;
class ServerProcess;

class Studio : public QObject {
  Q_OBJECT
 public:
  struct Options {
    QString modelRoot;  // --model-root: wins over the settings for this run
    QString dataDir;    // conversations, jobs, history and settings here instead of the user's
  };
  explicit Studio(Options options = {}, QObject* parent = nullptr);

  // A file in the app's data folder (the user's, or Options::dataDir).
  QString dataPath(const QString& name) const;
  ~Studio() override;

  StudioSettings& settings() { return settings_; }
  void saveSettings();
  ConversationStore* conversations() const { return conversations_; }
  LocalEngine* engine() const { return engine_; }
  RemoteChatBackend* remote() const { return remote_; }
  JobManager* jobs() const { return jobs_; }
  ServerProcess* server() const { return server_; }
  ChatBackend* chatBackend() const;

  // The K3 folder the settings point at (installed or not).
  QString modelRoot() const;
  // The folder the engine loads: the override, K3 when installed, or the demo model.
  QString activeModelRoot() const;
  bool usingDemo() const;
  // No K3 installed and the user has not chosen the demo or finished the wizard.
  bool needsFirstRun() const;

  void startEngine();
  void useDemoModel();
  // After the settings dialog: reloads the model when its options changed, swaps only the drafter
  // when that is all that changed, and starts or stops the server.
  void applySettings();
  void refreshDiskUsage();
  void applyServerSetting();
  const DiskUsage& diskUsage() const { return diskUsage_; }

 signals:
  void chatBackendChanged(deltafin::gui::ChatBackend* backend);
  void diskUsageChanged(const deltafin::gui::DiskUsage& usage);

 private:
  QString settingsFile() const;

  QString override_;
  QString dataDir_;
  StudioSettings settings_;
  ConversationStore* conversations_ = nullptr;
  LocalEngine* engine_ = nullptr;
  RemoteChatBackend* remote_ = nullptr;
  JobManager* jobs_ = nullptr;
  ServerProcess* server_ = nullptr;
  QString loadedRoot_;
  EngineOptions loadedOptions_;
  DiskUsage diskUsage_;
  bool scanning_ = false;
  QPointer<QThread> scanThread_;
};

}  // namespace deltafin::gui
