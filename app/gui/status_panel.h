#pragma once
// The always-visible status bar: backend (and why it fell back), tokens/s, expert cache hit
// rates per tier, and disk usage of the model folder.
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
  void setBackend(const BackendInfo& info);
  void setUnavailable(const QString& whatFailed);
  void setTokensPerSecond(double tokensPerSecond);
  void setCounters(const CacheCounters& counters);
  void setDiskUsage(const DiskUsage& usage);

  QString backendText() const;
  QString speedText() const;
  QString cacheText() const;
  QString diskText() const;

 private:
  QLabel* backend_ = nullptr;
  QLabel* speed_ = nullptr;
  QLabel* cache_ = nullptr;
  QLabel* disk_ = nullptr;
};

}  // namespace deltafin::gui
