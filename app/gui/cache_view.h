#pragma once
// The cache browser: the tier map (where every expert is now, per layer, and how much it was used)
// for every install kind, live while a reply runs; hit rates per tier; a stream cache's cap and
// its evict/warm actions; and the disk usage of every part of the install.
#include <QWidget>

#include "cache_inspector.h"
#include "chat_types.h"
#include "disk_usage.h"

class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QTreeWidget;
class QVBoxLayout;

namespace deltafin::gui {

class ExpertHeatMap;
class Studio;

class CacheView : public QWidget {
  Q_OBJECT
 public:
  explicit CacheView(Studio* studio, QWidget* parent = nullptr);

  void refresh();
  const CacheSnapshot& snapshot() const { return snapshot_; }
  ExpertHeatMap* heatMap() const { return heat_; }
  QTreeWidget* tierTable() const { return tiers_; }
  QTreeWidget* diskTable() const { return disk_; }
  QLabel* summary() const { return summary_; }
  QLabel* legend() const { return legend_; }
  // The place above the tier map for the placement plan's VRAM / RAM / disk bar (its own widget,
  // from the placement planner); the view takes ownership. Null removes it.
  void setPlacementBar(QWidget* bar);
  QWidget* placementBar() const { return placementBar_; }

 signals:
  void snapshotUpdated();

 private:
  void showSnapshot(const CacheSnapshot& s);
  void showCounters(const CacheCounters& c);
  void showDisk(const DiskUsage& u);

 protected:
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;

 private:
  void showLegend(const CacheSnapshot& s);

  Studio* studio_;
  CacheSnapshot snapshot_;
  QLabel* summary_ = nullptr;
  QLabel* legend_ = nullptr;
  QVBoxLayout* mapLayout_ = nullptr;
  QWidget* placementBar_ = nullptr;
  ExpertHeatMap* heat_ = nullptr;
  QTreeWidget* tiers_ = nullptr;
  QTreeWidget* disk_ = nullptr;
  QDoubleSpinBox* evictTarget_ = nullptr;
  QPushButton* evict_ = nullptr;
  QPushButton* warm_ = nullptr;
  QPushButton* refresh_ = nullptr;
  QLabel* actionStatus_ = nullptr;
};

}  // namespace deltafin::gui
