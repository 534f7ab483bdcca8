#pragma once
// The always-visible status bar: backend, drafter, tokens/s, expert hit rates per tier and free
// disk, each as a short field with its details in the tooltip, so the bar never sets the window's
// width. When the CPU computes though a GPU was wanted or possible, a "Why CPU?" link carries the
// reason and opens the settings.
#include <QStatusBar>

#include "chat_types.h"
#include "disk_usage.h"

class QLabel;

namespace deltafin::gui {

class StatusPanel : public QStatusBar {
  Q_OBJECT
 public:
  explicit StatusPanel(QWidget* parent = nullptr);

  void setLoading(const QString& modelRoot);
  void setLoadNote(const QString& note);  // the engine's progress while it loads
  void setBackend(const BackendInfo& info);
  void setUnavailable(const QString& whatFailed);
  void setTokensPerSecond(double tokensPerSecond);
  void setCounters(const CacheCounters& counters);
  void setDiskUsage(const DiskUsage& usage);

  QString backendText() const;
  QString backendDetails() const;  // the tooltip: model folder, why not the GPU, experts, drafter
  QString whyCpuReason() const;    // empty while the link is hidden
  QString speedText() const;
  QString cacheText() const;
  QString diskText() const;
  QLabel* whyCpuLink() const { return whyCpu_; }

 signals:
  void settingsRequested();

 private:
  QLabel* backend_ = nullptr;
  QLabel* whyCpu_ = nullptr;
  QLabel* speed_ = nullptr;
  QLabel* cache_ = nullptr;
  QLabel* disk_ = nullptr;
  QString backendFull_;
};

}  // namespace deltafin::gui
