#include "status_panel.h"

#include <QLabel>
#include <QLocale>

#include "formatting.h"
#include "tier_shares.h"

namespace deltafin::gui {

StatusPanel::StatusPanel(QWidget* parent) : QStatusBar(parent) {
  backend_ = new QLabel(this);
  backend_->setObjectName(QStringLiteral("statusBackend"));
  speed_ = new QLabel(this);
  speed_->setObjectName(QStringLiteral("statusSpeed"));
  cache_ = new QLabel(this);
  cache_->setObjectName(QStringLiteral("statusCache"));
  disk_ = new QLabel(this);
  disk_->setObjectName(QStringLiteral("statusDisk"));
  addWidget(backend_, 1);
  addPermanentWidget(speed_);
  addPermanentWidget(cache_);
  addPermanentWidget(disk_);
  backend_->setText(tr("No model loaded"));
  setTokensPerSecond(0);
  setCounters(CacheCounters{});
  disk_->setText(tr("Disk: –"));
}

void StatusPanel::setLoading(const QString& modelRoot) {
  backend_->setText(tr("Loading %1…").arg(modelRoot));
  backend_->setToolTip(modelRoot);
}

void StatusPanel::setBackend(const BackendInfo& info) {
  QString text = info.isDemo ? tr("%1 · demo model (random weights)").arg(info.name)
                             : tr("%1 · %2").arg(info.name, info.modelName);
  if (!info.fallbackReason.isEmpty()) text += tr(" (%1)").arg(info.fallbackReason);
  if (!info.drafter.isEmpty()) text += tr(" · drafter %1").arg(info.drafter);
  backend_->setText(text);
  QStringList tip{info.modelRoot};
  if (!info.expertSource.isEmpty()) tip << tr("Experts: %1").arg(info.expertSource);
  if (!info.drafterNote.isEmpty()) tip << tr("Drafter: %1").arg(info.drafterNote);
  backend_->setToolTip(tip.join('\n'));
}

void StatusPanel::setUnavailable(const QString& whatFailed) {
  backend_->setText(tr("No model: %1").arg(whatFailed));
  backend_->setToolTip(whatFailed);
}

void StatusPanel::setTokensPerSecond(double tps) {
  speed_->setText(tr("%1 tok/s").arg(QLocale().toString(tps, 'f', 1)));
}

void StatusPanel::setCounters(const CacheCounters& c) {
  if (c.requests == 0) {
    cache_->setText(tr("Experts: VRAM – · RAM – · disk – · net –"));
    return;
  }
  const TierShares t = tierShares(c);
  const QString vram = c.hasVram ? formatPercent(t.share(t.vram)) : tr("n/a");
  cache_->setText(tr("Experts: VRAM %1 · RAM %2 · disk %3 · net %4")
                      .arg(vram, formatPercent(t.share(t.ram)), formatPercent(t.share(t.disk)),
                           formatPercent(t.share(t.network))));
  cache_->setToolTip(tr("%1 expert lookups since the model was loaded").arg(c.requests));
}

void StatusPanel::setDiskUsage(const DiskUsage& u) {
  disk_->setText(tr("Disk: %1 used, %2 free").arg(formatBytes(u.totalAllocated()), formatBytes(u.freeBytes)));
  disk_->setToolTip(u.root);
}

QString StatusPanel::backendText() const { return backend_->text(); }
QString StatusPanel::speedText() const { return speed_->text(); }
QString StatusPanel::cacheText() const { return cache_->text(); }
QString StatusPanel::diskText() const { return disk_->text(); }

}  // namespace deltafin::gui
