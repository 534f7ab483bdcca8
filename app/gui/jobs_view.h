#pragma once
// Background jobs (setup, add-ons, upgrade): progress with speed and ETA, the log, clear errors,
// and pause/resume/cancel.
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace deltafin::gui {

class InstallJob;
class JobManager;

class JobsView : public QWidget {
  Q_OBJECT
 public:
  explicit JobsView(JobManager* jobs, QWidget* parent = nullptr);

  void select(const QString& jobId);
  QString selectedId() const;
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* cancelButton() const { return cancel_; }
  QTreeWidget* list() const { return list_; }
  QProgressBar* progressBar() const { return bar_; }

 private:
  void rebuild();
  void refreshRow(InstallJob* job);
  void showDetails();
  QTreeWidgetItem* itemFor(const QString& id) const;
  InstallJob* selected() const;

  JobManager* jobs_;
  QTreeWidget* list_ = nullptr;
  QLabel* title_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* detail_ = nullptr;
  QLabel* error_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QPushButton* pause_ = nullptr;
  QPushButton* resume_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* remove_ = nullptr;
  QLabel* empty_ = nullptr;
};

}  // namespace deltafin::gui
