#pragma once
// Upgrade Deltafin: which git checkout and build folder `deltafin upgrade` works on (by default
// the ones this app was built from), and whether to only check. The upgrade itself is a
// background job.
#include <QDialog>

#include "install_runner.h"

class QCheckBox;
class QLineEdit;

namespace deltafin::gui {

class Studio;

class UpgradeDialog : public QDialog {
  Q_OBJECT
 public:
  explicit UpgradeDialog(Studio* studio, QWidget* parent = nullptr);

  InstallRequest request() const;
  QString startedJobId() const { return jobId_; }
  void accept() override;  // starts the job

 private:
  Studio* studio_;
  QLineEdit* source_ = nullptr;
  QLineEdit* build_ = nullptr;
  QCheckBox* dryRun_ = nullptr;
  QString jobId_;
};

}  // namespace deltafin::gui
