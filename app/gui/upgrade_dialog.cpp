#include "upgrade_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "job_manager.h"
#include "studio.h"

namespace deltafin::gui {

UpgradeDialog::UpgradeDialog(Studio* studio, QWidget* parent) : QDialog(parent), studio_(studio) {
  setWindowTitle(tr("Upgrade Deltafin"));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("Fetches the git checkout's upstream, fast-forwards it (never merges or rebases) and "
                              "rebuilds it with the CMake configuration it was built with, so a CUDA build stays a "
                              "CUDA build. Models and caches are not touched. A checkout with local changes, a "
                              "detached HEAD or diverged history is refused, with what to do."),
                           this);
  intro->setWordWrap(true);
  layout->addWidget(intro);
  auto* form = new QFormLayout;
  auto folderRow = [this](QLineEdit* edit) {
    auto* row = new QHBoxLayout;
    auto* browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this, edit] {
      const QString dir = QFileDialog::getExistingDirectory(this, tr("Choose a folder"), edit->text());
      if (!dir.isEmpty()) edit->setText(dir);
    });
    row->addWidget(edit, 1);
    row->addWidget(browse);
    return row;
  };
  source_ = new QLineEdit(builtFromSourceDir(), this);
  source_->setObjectName(QStringLiteral("upgradeSource"));
  auto* sourceLabel = new QLabel(tr("&Source checkout:"), this);
  sourceLabel->setBuddy(source_);
  form->addRow(sourceLabel, folderRow(source_));
  build_ = new QLineEdit(builtInBuildDir(), this);
  build_->setObjectName(QStringLiteral("upgradeBuild"));
  auto* buildLabel = new QLabel(tr("B&uild folder:"), this);
  buildLabel->setBuddy(build_);
  form->addRow(buildLabel, folderRow(build_));
  layout->addLayout(form);
  dryRun_ = new QCheckBox(tr("&Only check whether an upgrade is available"), this);
  dryRun_->setObjectName(QStringLiteral("upgradeDryRun"));
  layout->addWidget(dryRun_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("&Upgrade in the background"));
  buttons->button(QDialogButtonBox::Ok)->setObjectName(QStringLiteral("upgradeStart"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
}

InstallRequest UpgradeDialog::request() const {
  InstallRequest r;
  r.kind = InstallRequest::Kind::Upgrade;
  r.sourceDir = source_->text().trimmed();
  r.buildDir = build_->text().trimmed();
  r.dryRun = dryRun_->isChecked();
  return r;
}

void UpgradeDialog::accept() {
  const InstallRequest req = request();
  const QString title = req.dryRun ? tr("Check for a Deltafin upgrade") : tr("Upgrade Deltafin");
  jobId_ = studio_->jobs()->startInstall(title, req)->id();
  QDialog::accept();
}

}  // namespace deltafin::gui
