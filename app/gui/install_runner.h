#pragma once
// The one file between the GUI and the install engine (engine/install): what a setup, add-on or
// upgrade job asks for, its plan in display form, and blocking calls made from job threads.
#include <QJsonObject>
#include <QList>
#include <QString>

#include <atomic>
#include <functional>

namespace deltafin::gui {

struct InstallRequest {
  enum class Kind { Install, Upgrade };
  Kind kind = Kind::Install;
  bool stream = false;  // stream install (spine + on-demand experts) instead of full
  bool k3 = true;       // false: add-ons only (DSpark and/or Qwen into an existing install)
  bool withDspark = true;
  bool withQwen = false;
  QString modelRoot;
  QString hubUrl;        // empty: $DELTAFIN_HUB_URL or the public Hub
  quint64 cacheCap = 0;  // stream: 0 picks the default from free space
  // Upgrade: the git checkout and its CMake build folder (empty: those this app was built from).
  QString sourceDir, buildDir;
  bool dryRun = false;  // upgrade: check and report, change nothing

  QJsonObject toJson() const;
  static InstallRequest fromJson(const QJsonObject& o);
};

struct PlannedRepoView {
  QString role, repo, revision, folder;
  quint64 installBytes = 0, missingBytes = 0;
  int files = 0;
};

struct InstallPlanView {
  QList<PlannedRepoView> repos;
  quint64 installBytes = 0, missingBytes = 0, freeBytes = 0, cacheCap = 0;
  QString description;  // the engine's own summary
};

struct PinnedRepoView {
  QString role, repo, revision, what;
};

struct InstallProgressView {
  quint64 bytesDone = 0, bytesTotal = 0;
  double bytesPerSecond = 0;
  double etaSeconds = -1;
  int filesDone = 0, filesTotal = 0;
  QString current;
};

// Callbacks from the install engine's threads; the job posts them to the GUI thread.
struct InstallCallbacks {
  std::function<void(const QString&)> message;
  std::function<void(const InstallProgressView&)> progress;
  std::function<void(const QString& what, const QString& todo)> error;
};

// The repositories and revisions this build installs.
QList<PinnedRepoView> pinnedRepos();
// Free space for `path` (its nearest existing parent).
quint64 freeDiskBytes(const QString& path);
// Lists the repositories on the hub and sizes the install; throws deltafin::Error.
InstallPlanView planInstall(const InstallRequest& request);
// The whole install (resumes what an earlier run left); throws deltafin::Error, also when cancelled.
void runInstall(const InstallRequest& request, const InstallCallbacks& callbacks, const std::atomic<bool>* cancel);
// `deltafin upgrade`: fast-forward the checkout and rebuild it; throws deltafin::Error saying why
// not (dirty, detached, diverged, build failed). Returns its one-line outcome. Cannot be paused.
QString runUpgrade(const InstallRequest& request, const InstallCallbacks& callbacks);
// Where this app was built from, the defaults of an upgrade.
QString builtFromSourceDir();
QString builtInBuildDir();

}  // namespace deltafin::gui
