#pragma once
// Benchmarks: runs arms on the engine thread, charts prefill/decode tokens/s and expert hit
// rates (Qt Charts), keeps the history, and exports it as JSON.
#include <QList>
#include <QWidget>

#include "bench_types.h"

class QLabel;
class QPushButton;
class QSpinBox;
class QTreeWidget;

class QChartView;
class QBarSeries;
class QBarSet;
class QBarCategoryAxis;
class QValueAxis;

namespace deltafin::gui {

class PlacementBar;

class LocalEngine;

class BenchView : public QWidget {
  Q_OBJECT
 public:
  BenchView(LocalEngine* engine, QString historyPath, QWidget* parent = nullptr);

  static QList<BenchArm> defaultArms();

  void runArms(const QList<BenchArm>& arms);
  bool isRunning() const { return !queue_.isEmpty() || running_; }
  const QList<BenchResult>& history() const { return history_; }
  // Writes {"results": [...]} with every result in the history; false with `error` set on failure.
  bool exportJson(const QString& path, QString* error = nullptr) const;
  QPushButton* runButton() const { return run_; }
  // The placement plan of the loaded model, its predicted decode speed beside the last run's.
  PlacementBar* placementBar() const { return placement_; }

 signals:
  void runFinished();

 private:
  void next();
  void addResult(const BenchResult& r);
  void refresh();
  void loadHistory();
  void saveHistory() const;
  QList<BenchArm> checkedArms() const;

  LocalEngine* engine_;
  QString historyPath_;
  QList<BenchResult> history_;
  QList<BenchArm> queue_;
  bool running_ = false;

  QTreeWidget* arms_ = nullptr;
  QSpinBox* repeats_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* stop_ = nullptr;
  QPushButton* export_ = nullptr;
  QPushButton* clear_ = nullptr;
  QLabel* status_ = nullptr;
  PlacementBar* placement_ = nullptr;
  QChartView* speedChart_ = nullptr;
  QChartView* hitChart_ = nullptr;
  QTreeWidget* table_ = nullptr;
};

}  // namespace deltafin::gui
