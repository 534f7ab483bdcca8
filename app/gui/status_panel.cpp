#include "status_panel.h"

#include <QLabel>
#include <QLocale>

#include "formatting.h"
#include "tier_shares.h"

namespace deltafin::gui {
namespace {

// A model folder can be named anything: the backend field shows at most this much of it.
constexpr int kBackendMaxWidth = 260;

QLabel* field(const char* name, QWidget* parent) {
  auto* label = new QLabel(parent);
  label->setObjectName(QString::fromLatin1(name));
  // Keyboard and screen-reader users reach the fields' text (and tooltips) too.
  label->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  return label;
}

}  // namespace

StatusPanel::StatusPanel(QWidget* parent) : QStatusBar(parent) {
  setAccessibleName(tr("Status"));
  backend_ = field("statusBackend", this);
  backend_->setAccessibleName(tr("Backend"));
  whyCpu_ = new QLabel(this);
  whyCpu_->setObjectName(QStringLiteral("statusWhyCpu"));
  whyCpu_->setText(QStringLiteral("<a href=\"settings\">%1</a>").arg(tr("Why CPU?").toHtmlEscaped()));
  whyCpu_->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
  whyCpu_->setAccessibleName(tr("Why CPU?"));
  whyCpu_->setVisible(false);
  connect(whyCpu_, &QLabel::linkActivated, this, &StatusPanel::settingsRequested);
  speed_ = field("statusSpeed", this);
  speed_->setAccessibleName(tr("Speed"));
  cache_ = field("statusCache", this);
  cache_->setAccessibleName(tr("Expert lookups per tier"));
  disk_ = field("statusDisk", this);
  disk_->setAccessibleName(tr("Disk"));
  addWidget(backend_);
  addWidget(whyCpu_);
  addPermanentWidget(speed_);
  addPermanentWidget(cache_);
  addPermanentWidget(disk_);
  backend_->setText(tr("No model loaded"));
  setTokensPerSecond(0);
  setCounters(CacheCounters{});
  disk_->setText(tr("Disk –"));
}

void StatusPanel::setLoading(const QString& modelRoot) {
  backend_->setText(tr("Loading…"));
  backend_->setToolTip(modelRoot);
  whyCpu_->setVisible(false);
}

void StatusPanel::setLoadNote(const QString& note) {
  backend_->setToolTip(note);
  backend_->setText(backend_->fontMetrics().elidedText(tr("Loading… %1").arg(note), Qt::ElideMiddle, kBackendMaxWidth));
}

void StatusPanel::setBackend(const BackendInfo& info) {
  QString text = info.isDemo ? tr("%1 · demo model").arg(info.name) : tr("%1 · %2").arg(info.name, info.modelName);
  if (!info.drafter.isEmpty()) text += tr(" · %1").arg(info.drafter);
  backend_->setText(backend_->fontMetrics().elidedText(text, Qt::ElideMiddle, kBackendMaxWidth));
  QStringList tip;
  tip << (info.isDemo ? tr("%1, demo model (trained on the King James Bible)").arg(info.name)
                      : tr("%1, %2").arg(info.name, info.modelName));
  if (!info.modelRoot.isEmpty()) tip << info.modelRoot;
  if (!info.fallbackReason.isEmpty()) tip << tr("Not on the GPU: %1").arg(info.fallbackReason);
  if (!info.expertSource.isEmpty()) tip << tr("Experts: %1").arg(info.expertSource);
  if (!info.drafter.isEmpty() || !info.drafterNote.isEmpty())
    tip << tr("Drafter: %1").arg(info.drafterNote.isEmpty() ? info.drafter : info.drafterNote);
  backendFull_ = tip.join('\n');
  backend_->setToolTip(backendFull_);
  const bool why = !info.fallbackReason.isEmpty();
  whyCpu_->setToolTip(why ? tr("%1. Click to open the device settings.").arg(info.fallbackReason) : QString());
  whyCpu_->setAccessibleDescription(info.fallbackReason);
  whyCpu_->setVisible(why);
}

void StatusPanel::setUnavailable(const QString& whatFailed) {
  backend_->setText(tr("No model"));
  backendFull_ = whatFailed;
  backend_->setToolTip(whatFailed);
  whyCpu_->setVisible(false);
}

void StatusPanel::setTokensPerSecond(double tps) {
  speed_->setText(tr("%1 tok/s").arg(QLocale().toString(tps, 'f', 1)));
  speed_->setToolTip(tr("Decode speed of the last reply"));
}

void StatusPanel::setCounters(const CacheCounters& c) {
  if (c.requests == 0) {
    cache_->setText(tr("Experts –"));
    cache_->setToolTip(tr("Where expert lookups were served (VRAM, RAM, disk, network); none yet"));
    return;
  }
  const TierShares t = tierShares(c);
  // Only the tiers this setup has: VRAM on a GPU session, the network for a streaming install.
  QStringList parts;
  if (c.hasVram) parts << tr("VRAM %1").arg(formatPercent(t.share(t.vram)));
  parts << tr("RAM %1").arg(formatPercent(t.share(t.ram))) << tr("disk %1").arg(formatPercent(t.share(t.disk)));
  if (t.network > 0) parts << tr("net %1").arg(formatPercent(t.share(t.network)));
  cache_->setText(tr("Experts %1").arg(parts.join(QStringLiteral(" · "))));
  const QString vram = c.hasVram ? formatPercent(t.share(t.vram)) : tr("n/a");
  cache_->setToolTip(
      tr("%1 expert lookups since the model was loaded, each counted in the fastest tier that "
         "served it:\nVRAM %2 · RAM %3 · disk %4 · network %5")
          .arg(c.requests)
          .arg(vram, formatPercent(t.share(t.ram)), formatPercent(t.share(t.disk)), formatPercent(t.share(t.network))));
}

void StatusPanel::setDiskUsage(const DiskUsage& u) {
  disk_->setText(tr("%1 free").arg(formatBytes(u.freeBytes)));
  disk_->setToolTip(tr("Model folder %1: %2 used, %3 free on its disk")
                        .arg(u.root, formatBytes(u.totalAllocated()), formatBytes(u.freeBytes)));
}

QString StatusPanel::backendText() const { return backend_->text(); }
QString StatusPanel::backendDetails() const { return backendFull_; }
QString StatusPanel::whyCpuReason() const {
  return whyCpu_->isVisibleTo(this) ? whyCpu_->accessibleDescription() : QString();
}
QString StatusPanel::speedText() const { return speed_->text(); }
QString StatusPanel::cacheText() const { return cache_->text(); }
QString StatusPanel::diskText() const { return disk_->text(); }

}  // namespace deltafin::gui
