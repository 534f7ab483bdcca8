#include "install_runner.h"

#include <QCoreApplication>

#include "install/disk_space.h"
#include "install/hub_client.h"
#include "install/install_events.h"
#include "install/pinned_repos.h"
#include "install/setup.h"
#include "install/upgrade.h"
#include "deltafin/build_info.h"

namespace deltafin::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

SetupOptions toOptions(const InstallRequest& r) {
  SetupOptions o;
  o.mode = r.stream ? SetupOptions::Mode::Stream : SetupOptions::Mode::Full;
  o.k3 = r.k3;
  o.with_dspark = r.withDspark;
  o.include_qwen = r.withQwen;
  o.model_root = r.modelRoot.toStdString();
  o.hub.base_url = resolve_hub_url(r.hubUrl.toStdString());
  o.cache_cap = r.cacheCap;
  return o;
}

class CallbackObserver : public InstallObserver {
 public:
  explicit CallbackObserver(const InstallCallbacks& cb) : cb_(cb) {}
  void on_message(const std::string& text) override {
    if (cb_.message) cb_.message(q(text));
  }
  void on_progress(const InstallProgress& p) override {
    if (!cb_.progress) return;
    InstallProgressView v;
    v.bytesDone = p.bytes_done;
    v.bytesTotal = p.bytes_total;
    v.bytesPerSecond = p.bytes_per_second;
    v.etaSeconds = p.eta_seconds;
    v.filesDone = p.files_done;
    v.filesTotal = p.files_total;
    v.current = q(p.current);
    cb_.progress(v);
  }
  void on_file(const std::string& repo, const std::string& path, FileState state, const std::string& detail) override {
    if (!cb_.message) return;
    // Per-file transitions worth a log line; byte progress goes through on_progress.
    if (state == FileState::Downloading || state == FileState::Queued) return;
    QString line = QStringLiteral("%1/%2: %3").arg(q(repo), q(path), QString::fromLatin1(file_state_name(state)));
    if (!detail.empty()) line += QStringLiteral(" (") + q(detail) + QStringLiteral(")");
    cb_.message(line);
  }
  void on_error(const std::string& what, const std::string& todo) override {
    if (cb_.error) cb_.error(q(what), q(todo));
  }

 private:
  const InstallCallbacks& cb_;
};

}  // namespace

QList<PinnedRepoView> pinnedRepos() {
  QList<PinnedRepoView> out;
  for (const PinnedRepo& p : pinned_repos())
    out.push_back({QString::fromLatin1(role_name(p.role)), QString::fromUtf8(p.repo), QString::fromUtf8(p.revision),
                   QString::fromUtf8(p.what)});
  return out;
}

quint64 freeDiskBytes(const QString& path) { return free_disk_bytes(path.toStdString()); }

InstallPlanView planInstall(const InstallRequest& request) {
  const SetupOptions opt = toOptions(request);
  const HubClient hub(opt.hub);
  const SetupPlan plan = plan_setup(opt, hub);
  InstallPlanView v;
  for (const PlannedRepo& r : plan.repos) {
    v.repos.push_back({QString::fromLatin1(role_name(r.role)), q(r.repo), q(r.revision), q(r.folder), r.install_bytes,
                       r.missing_bytes, static_cast<int>(r.files.size())});
  }
  v.installBytes = plan.install_bytes;
  v.missingBytes = plan.missing_bytes;
  v.freeBytes = plan.free_bytes;
  v.cacheCap = plan.cache_cap;
  v.description = q(plan.describe());
  return v;
}

void runInstall(const InstallRequest& request, const InstallCallbacks& callbacks, const std::atomic<bool>* cancel) {
  CallbackObserver obs(callbacks);
  run_setup(toOptions(request), obs, cancel);
}

QString runUpgrade(const InstallRequest& request, const InstallCallbacks& callbacks) {
  UpgradeOptions o;
  o.source_dir = request.sourceDir.toStdString();
  o.build_dir = request.buildDir.toStdString();
  o.dry_run = request.dryRun;
  const UpgradeResult r = run_upgrade(o, [&](const std::string& line) {
    if (callbacks.message) callbacks.message(q(line));
  });
  auto shortId = [](const std::string& id) { return q(id.substr(0, 12)); };
  switch (r.outcome) {
    case UpgradeResult::Outcome::UpToDate:
      return QCoreApplication::translate("InstallRunner", "Already up to date at %1 (%2)")
          .arg(shortId(r.from), q(r.branch));
    case UpgradeResult::Outcome::Upgraded:
      return QCoreApplication::translate("InstallRunner", "Upgraded %1 from %2 to %3 (%4 commits)")
          .arg(q(r.branch), shortId(r.from), shortId(r.to))
          .arg(r.commits);
    case UpgradeResult::Outcome::WouldUpgrade:
      return QCoreApplication::translate("InstallRunner", "An upgrade is available: %1 commits, %2 to %3")
          .arg(r.commits)
          .arg(shortId(r.from), shortId(r.to));
    case UpgradeResult::Outcome::AheadOfUpstream:
      return QCoreApplication::translate("InstallRunner", "%1 is ahead of %2: nothing to upgrade")
          .arg(q(r.branch), q(r.upstream));
  }
  return {};
}

QString builtFromSourceDir() { return QString::fromUtf8(build_info::source_dir); }
QString builtInBuildDir() { return QString::fromUtf8(build_info::binary_dir); }

}  // namespace deltafin::gui
