#include "cache_view.h"

#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "expert_heat_map.h"
#include "formatting.h"
#include "local_engine.h"
#include "studio.h"
#include "tier_shares.h"

namespace deltafin::gui {

CacheView::CacheView(Studio* studio, QWidget* parent) : QWidget(parent), studio_(studio) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("cacheSummary"));
  summary_->setWordWrap(true);
  layout->addWidget(summary_);

  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->setObjectName(QStringLiteral("cacheSplitter"));
  splitter->setChildrenCollapsible(false);
  auto* left = new QGroupBox(tr("Experts per layer: where they are, how much they are used"), splitter);
  auto* ll = new QVBoxLayout(left);
  mapLayout_ = ll;
  heat_ = new ExpertHeatMap(left);
  ll->addWidget(heat_, 1);
  legend_ = new QLabel(left);
  legend_->setObjectName(QStringLiteral("tierLegend"));
  legend_->setWordWrap(true);
  legend_->setTextFormat(Qt::RichText);
  ll->addWidget(legend_);
  auto* actions = new QHBoxLayout;
  warm_ = new QPushButton(tr("&Warm selected layer"), left);
  warm_->setToolTip(tr("Fetch every expert of the selected layer now"));
  actions->addWidget(warm_);
  actions->addStretch(1);
  actions->addWidget(new QLabel(tr("Evict down to"), left));
  evictTarget_ = new QDoubleSpinBox(left);
  evictTarget_->setAccessibleName(tr("Evict down to"));
  evictTarget_->setDecimals(2);
  evictTarget_->setRange(0, 1e6);
  evictTarget_->setSuffix(tr(" GB"));
  actions->addWidget(evictTarget_);
  evict_ = new QPushButton(tr("&Evict"), left);
  evict_->setToolTip(tr("Punch holes for the least recently used experts until the cache is this small"));
  actions->addWidget(evict_);
  ll->addLayout(actions);
  actionStatus_ = new QLabel(left);
  actionStatus_->setWordWrap(true);
  ll->addWidget(actionStatus_);
  splitter->addWidget(left);

  auto* right = new QWidget(splitter);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  auto* tierBox = new QGroupBox(tr("Where experts came from"), right);
  auto* tl = new QVBoxLayout(tierBox);
  tiers_ = new QTreeWidget(tierBox);
  tiers_->setObjectName(QStringLiteral("tierTable"));
  tiers_->setAccessibleName(tr("Where experts came from"));
  tiers_->setRootIsDecorated(false);
  tiers_->setHeaderLabels({tr("Tier"), tr("Lookups"), tr("Share")});
  tiers_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  tl->addWidget(tiers_);
  rl->addWidget(tierBox);
  auto* diskBox = new QGroupBox(tr("Disk usage"), right);
  auto* dl = new QVBoxLayout(diskBox);
  disk_ = new QTreeWidget(diskBox);
  disk_->setObjectName(QStringLiteral("diskTable"));
  disk_->setAccessibleName(tr("Disk usage"));
  disk_->setRootIsDecorated(false);
  disk_->setHeaderLabels({tr("Part"), tr("On disk"), tr("Files")});
  disk_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  dl->addWidget(disk_);
  rl->addWidget(diskBox, 1);
  refresh_ = new QPushButton(tr("&Refresh"), right);
  rl->addWidget(refresh_, 0, Qt::AlignRight);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({620, 420});
  layout->addWidget(splitter, 1);

  LocalEngine* engine = studio_->engine();
  connect(refresh_, &QPushButton::clicked, this, &CacheView::refresh);
  connect(warm_, &QPushButton::clicked, this, [this, engine] {
    if (heat_->selectedLayer() < 0) return;
    actionStatus_->setText(tr("Warming layer %1…").arg(heat_->selectedLayer()));
    engine->warmCacheLayer(heat_->selectedLayer());
  });
  connect(evict_, &QPushButton::clicked, this, [this, engine] {
    actionStatus_->setText(tr("Evicting…"));
    engine->evictCache(static_cast<quint64>(evictTarget_->value() * 1e9));
  });
  connect(heat_, &ExpertHeatMap::layerSelected, this, [this](int) { warm_->setEnabled(snapshot_.stream); });
  connect(engine, &LocalEngine::cacheSnapshot, this, &CacheView::showSnapshot);
  connect(engine, &LocalEngine::cacheActionDone, actionStatus_, &QLabel::setText);
  connect(engine, &LocalEngine::cacheActionFailed, this, [this](const QString& what, const QString& todo) {
    actionStatus_->setText(todo.isEmpty() ? what : tr("%1 — %2").arg(what, todo));
  });
  connect(engine, &ChatBackend::countersChanged, this, &CacheView::showCounters);
  connect(engine, &ChatBackend::ready, this, &CacheView::refresh);
  connect(studio_, &Studio::diskUsageChanged, this, &CacheView::showDisk);
  showSnapshot(CacheSnapshot{});
  showCounters(CacheCounters{});
  showDisk(studio_->diskUsage());
  if (engine->isReady()) refresh();
}

void CacheView::setPlacementBar(QWidget* bar) {
  delete placementBar_;
  placementBar_ = bar;
  if (bar) mapLayout_->insertWidget(0, bar);
}

void CacheView::showEvent(QShowEvent* event) {
  // The tier map follows a running reply only while someone can see it.
  studio_->engine()->setLiveCacheUpdates(true);
  QWidget::showEvent(event);
}

void CacheView::hideEvent(QHideEvent* event) {
  studio_->engine()->setLiveCacheUpdates(false);
  QWidget::hideEvent(event);
}

void CacheView::showLegend(const CacheSnapshot& s) {
  QStringList parts;
  for (ExpertTier t : {ExpertTier::Vram, ExpertTier::Ram, ExpertTier::Disk, ExpertTier::Network}) {
    // Only the tiers this install has.
    if ((t == ExpertTier::Vram && !s.vramTier) || (t == ExpertTier::Ram && !s.ramTier) ||
        (t == ExpertTier::Network && !s.stream))
      continue;
    parts << QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2&nbsp;%3")
                 .arg(heat_->tierColor(t).name(), tierName(t).toHtmlEscaped(), QLocale().toString(s.count(t)));
  }
  const QString heat = !s.uses.isEmpty() ? tr("stronger = looked up more often")
                       : s.stream        ? tr("stronger = used more recently")
                                         : tr("this install keeps no use counts (the RAM expert cache does)");
  legend_->setText(parts.join(QStringLiteral(" &nbsp; ")) +
                   QStringLiteral(" &nbsp; <i>%1</i>").arg(heat.toHtmlEscaped()));
}

void CacheView::refresh() {
  studio_->engine()->requestCacheSnapshot();
  studio_->refreshDiskUsage();
}

void CacheView::showSnapshot(const CacheSnapshot& s) {
  snapshot_ = s;
  heat_->setSnapshot(s);
  if (!studio_->engine()->isReady()) {
    summary_->setText(tr("No model is loaded."));
  } else if (s.allInVram) {
    summary_->setText(tr("Every expert of the %1 layers is in VRAM. Source: %2").arg(s.layers).arg(s.source));
  } else if (s.ramTier) {
    summary_->setText(tr("Full install with the RAM expert cache: %1 of %2 experts in RAM (%3 of %4), the rest "
                         "read from local disk when used.")
                          .arg(s.cachedExperts)
                          .arg(s.layers * s.experts)
                          .arg(formatBytes(s.cachedBytes), formatBytes(s.capBytes)));
    summary_->setToolTip(s.source);
  } else if (!s.stream) {
    summary_->setText(tr("Full install: all %1 experts of each of %2 layers are read from local disk through the "
                         "page cache. Source: %3")
                          .arg(s.experts)
                          .arg(s.layers)
                          .arg(s.source));
  } else {
    const int total = s.layers * s.experts;
    summary_->setText(
        tr("Streaming install: %1 of %2 experts cached, %3 of a %4 cap (%5 per expert). "
           "Experts not cached are fetched from the Hub on first use.")
            .arg(s.cachedExperts)
            .arg(total)
            .arg(formatBytes(s.cachedBytes), formatBytes(s.capBytes), formatBytes(s.bytesPerExpert)) +
        "\n" +
        tr("Verified against the Hub: %1 of %2 shards; unverified: %3 on disk (a shard is checked when it is complete; "
           "deltafin cache verify --fetch checks them all).")
            .arg(s.verifiedShards)
            .arg(s.shards)
            .arg(formatBytes(s.unverifiedBytes)));
    evictTarget_->setMaximum(std::max(0.0, s.capBytes / 1e9));
  }
  // A partial VRAM tier sits over the host's tiers: its experts are drawn in VRAM.
  if (studio_->engine()->isReady() && s.vramTier && !s.allInVram)
    summary_->setText(tr("GPU session: %1 experts in the VRAM tier's %2 slots now; below it:")
                          .arg(s.count(ExpertTier::Vram))
                          .arg(s.vramSlots) +
                      "\n" + summary_->text());
  showLegend(s);
  warm_->setEnabled(s.stream && heat_->selectedLayer() >= 0);
  evict_->setEnabled(s.stream);
  evictTarget_->setEnabled(s.stream);
  emit snapshotUpdated();
}

void CacheView::showCounters(const CacheCounters& c) {
  tiers_->clear();
  const TierShares t = tierShares(c);
  auto row = [&](const QString& name, quint64 count, bool known) {
    new QTreeWidgetItem(tiers_, {name, known ? QString::number(count) : tr("n/a"),
                                 known && t.lookups ? formatPercent(t.share(count)) : QStringLiteral("–")});
  };
  row(tr("VRAM cache"), t.vram, c.hasVram);
  row(tr("RAM cache"), t.ram, true);
  row(tr("Local disk"), t.disk, true);
  row(tr("Network"), t.network, true);
  tiers_->setToolTip(tr("Each of the %1 lookups counts once, in the fastest tier that served it. "
                        "Experts fetched from the network: %2 (Warm and prefetch included).")
                         .arg(c.requests)
                         .arg(c.netFetches));
}

void CacheView::showDisk(const DiskUsage& u) {
  disk_->clear();
  for (const DiskUsagePart& p : u.parts) {
    auto* item = new QTreeWidgetItem(disk_, {p.label, formatBytes(p.allocated), QString::number(p.files)});
    item->setToolTip(0, p.path);
    if (p.apparent != p.allocated)
      item->setToolTip(
          1,
          tr("%1 allocated of %2 in file sizes (sparse files)").arg(formatBytes(p.allocated), formatBytes(p.apparent)));
  }
  auto* total = new QTreeWidgetItem(disk_, {tr("Total"), formatBytes(u.totalAllocated()), QString()});
  QFont bold = total->font(0);
  bold.setBold(true);
  total->setFont(0, bold);
  total->setFont(1, bold);
  new QTreeWidgetItem(disk_, {tr("Free on this disk"), formatBytes(u.freeBytes), QString()});
}

}  // namespace deltafin::gui
