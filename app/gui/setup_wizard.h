#pragma once
// First run and Setup menu: full or streaming install, the model folder, add-ons, the pinned
// revisions, and the disk space needed against what is free. The install itself becomes a
// background job; the wizard only plans it. With Purpose::Addons (File > Install add-ons, or
// the welcome page's button) it installs only the drafters into a folder that holds K3.
#include <QWizard>

#include "install_runner.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QRadioButton;
class QTreeWidget;

namespace deltafin::gui {

class Studio;

class SetupWizard : public QWizard {
  Q_OBJECT
 public:
  enum PageId { WelcomePage, ModePage, AddonsPage, PlanPage };
  enum class Purpose { Setup, Addons };

  explicit SetupWizard(Studio* studio, QWidget* parent = nullptr, Purpose purpose = Purpose::Setup);

  Purpose purpose() const { return purpose_; }
  void setPurpose(Purpose purpose);
  InstallRequest request() const;
  // Set by the plan page once the hub listed every repository.
  const InstallPlanView& plan() const { return plan_; }
  bool planReady() const { return planReady_; }
  QString planError() const { return planError_; }
  QString startedJobId() const { return jobId_; }

  void accept() override;

 signals:
  void demoChosen();
  void planFinished(bool ok);

 private:
  friend class PlanWizardPage;
  void startPlanning();
  void updateFolderNotes();

  Studio* studio_;
  Purpose purpose_ = Purpose::Setup;
  QLabel* addonsNote_ = nullptr;
  QLabel* freeLabel_ = nullptr;
  QRadioButton* full_ = nullptr;
  QRadioButton* stream_ = nullptr;
  QLineEdit* folder_ = nullptr;
  QLineEdit* hub_ = nullptr;
  QCheckBox* dspark_ = nullptr;
  QCheckBox* qwen_ = nullptr;
  QTreeWidget* pinned_ = nullptr;
  QTreeWidget* planTable_ = nullptr;
  QLabel* planSummary_ = nullptr;
  InstallPlanView plan_;
  bool planReady_ = false;
  bool planning_ = false;
  QString planError_;
  QString jobId_;
  quint64 planGeneration_ = 0;
};

}  // namespace deltafin::gui
