#pragma once
// The cache browser: which experts are cached per layer, sizes, hit rates per tier, the cap,
// evict/warm actions, and the disk usage of every part of the install.
#include <QWidget>

#include "cache_inspector.h"
#include "chat_types.h"
#include "disk_usage.h"

class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QTreeWidget;

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

 signals:
  void snapshotUpdated();

 private:
  void showSnapshot(const CacheSnapshot& s);
  void showCounters(const CacheCounters& c);
  void showDisk(const DiskUsage& u);

  Studio* studio_;
  CacheSnapshot snapshot_;
  QLabel* summary_ = nullptr;
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
