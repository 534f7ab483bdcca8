#include "setup_wizard.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QRadioButton>
#include <QThread>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "app_paths.h"
#include "base/error.h"
#include "formatting.h"
#include "job_manager.h"
#include "studio.h"

namespace deltafin::gui {

// The plan page is complete only when the plan is known and fits on the disk.
class PlanWizardPage : public QWizardPage {
 public:
  PlanWizardPage(SetupWizard* wizard) : wizard_(wizard) {}
  void initializePage() override { wizard_->startPlanning(); }
  bool isComplete() const override {
    return wizard_->planReady_ && wizard_->plan_.missingBytes <= wizard_->plan_.freeBytes;
  }
  void refresh() { emit completeChanged(); }

 private:
  SetupWizard* wizard_;
};

SetupWizard::SetupWizard(Studio* studio, QWidget* parent, Purpose purpose) : QWizard(parent), studio_(studio) {
  setWindowTitle(tr("Set up Deltafin"));
  setOption(QWizard::NoBackButtonOnStartPage);
  setWizardStyle(QWizard::ClassicStyle);

  // Welcome.
  auto* welcome = new QWizardPage(this);
  welcome->setTitle(tr("Welcome to Deltafin"));
  auto* wl = new QVBoxLayout(welcome);
  auto* intro = new QLabel(tr("Deltafin runs the full Kimi K3 on this machine, every weight exactly as Moonshot "
                              "shipped it. The next pages download it: either all of it (1.56 TB), or a "
                              "streaming install that fetches experts when they are first used."),
                           welcome);
  intro->setWordWrap(true);
  wl->addWidget(intro);
  const QString demo = bundledDemoModel();
  if (!demo.isEmpty()) {
    auto* demoText = new QLabel(tr("Not ready to download? The bundled demo model is a very small K3 in K3's exact "
                                   "format, trained on the King James Bible, so you can try every part of the app "
                                   "right now. It is not Kimi K3: it answers in the Bible's English."),
                                welcome);
    demoText->setWordWrap(true);
    wl->addWidget(demoText);
    auto* demoButton = new QPushButton(tr("Try the &demo model"), welcome);
    demoButton->setObjectName(QStringLiteral("tryDemoButton"));
    connect(demoButton, &QPushButton::clicked, this, [this] {
      studio_->useDemoModel();
      emit demoChosen();
      QWizard::reject();
    });
    wl->addWidget(demoButton, 0, Qt::AlignLeft);
  }
  auto* addonsText = new QLabel(tr("K3 already installed? Add the drafters (DSpark, Qwen3) to it without touching the "
                                   "model."),
                                welcome);
  addonsText->setWordWrap(true);
  wl->addWidget(addonsText);
  auto* addonsButton = new QPushButton(tr("Install only &add-ons…"), welcome);
  addonsButton->setObjectName(QStringLiteral("addonsOnlyButton"));
  connect(addonsButton, &QPushButton::clicked, this, [this] {
    setPurpose(Purpose::Addons);
    next();
  });
  wl->addWidget(addonsButton, 0, Qt::AlignLeft);
  wl->addStretch(1);
  setPage(WelcomePage, welcome);

  // Mode and folder.
  auto* mode = new QWizardPage(this);
  mode->setTitle(tr("How should K3 be installed?"));
  auto* ml = new QVBoxLayout(mode);
  addonsNote_ = new QLabel(mode);
  addonsNote_->setObjectName(QStringLiteral("addonsNote"));
  addonsNote_->setWordWrap(true);
  ml->addWidget(addonsNote_);
  full_ = new QRadioButton(tr("&Full install: every file from the Hub, verified (about 1.56 TB)"), mode);
  full_->setObjectName(QStringLiteral("fullInstall"));
  stream_ = new QRadioButton(tr("&Streaming install: configuration and non-expert weights now (about 114 GB); "
                                "experts are fetched on first use into a capped cache"),
                             mode);
  stream_->setObjectName(QStringLiteral("streamInstall"));
  full_->setChecked(true);
  ml->addWidget(full_);
  ml->addWidget(stream_);
  auto* form = new QFormLayout;
  auto* folderRow = new QHBoxLayout;
  folder_ = new QLineEdit(studio_->modelRoot(), mode);
  folder_->setObjectName(QStringLiteral("modelFolder"));
  auto* browse = new QPushButton(tr("&Browse…"), mode);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Model folder"), folder_->text());
    if (!dir.isEmpty()) folder_->setText(dir);
  });
  folderRow->addWidget(folder_, 1);
  folderRow->addWidget(browse);
  auto* folderLabel = new QLabel(tr("&Model folder:"), mode);
  folderLabel->setBuddy(folder_);
  form->addRow(folderLabel, folderRow);
  hub_ = new QLineEdit(qEnvironmentVariable("DELTAFIN_HUB_URL"), mode);
  hub_->setObjectName(QStringLiteral("hubUrl"));
  hub_->setPlaceholderText(QStringLiteral("https://huggingface.co"));
  form->addRow(tr("&Hub address:"), hub_);
  ml->addLayout(form);
  freeLabel_ = new QLabel(mode);
  connect(folder_, &QLineEdit::textChanged, this, &SetupWizard::updateFolderNotes);
  ml->addWidget(freeLabel_);
  ml->addStretch(1);
  setPage(ModePage, mode);

  // Add-ons and pinned revisions.
  auto* addons = new QWizardPage(this);
  addons->setTitle(tr("Add-ons"));
  auto* al = new QVBoxLayout(addons);
  dspark_ = new QCheckBox(tr("D&Spark drafter (recommended: faster replies, identical answers)"), addons);
  dspark_->setObjectName(QStringLiteral("withDspark"));
  dspark_->setChecked(true);
  qwen_ = new QCheckBox(tr("&Qwen3 0.6B and 1.7B drafters"), addons);
  qwen_->setObjectName(QStringLiteral("withQwen"));
  al->addWidget(dspark_);
  al->addWidget(qwen_);
  al->addWidget(new QLabel(tr("Every repository is installed at the revision Deltafin was tested with:"), addons));
  pinned_ = new QTreeWidget(addons);
  pinned_->setRootIsDecorated(false);
  pinned_->setHeaderLabels({tr("Part"), tr("Repository"), tr("Revision")});
  for (const PinnedRepoView& p : pinnedRepos()) {
    auto* item = new QTreeWidgetItem(pinned_, {p.role, p.repo, p.revision.left(12)});
    item->setToolTip(2, p.revision);
    item->setToolTip(0, p.what);
  }
  pinned_->header()->setSectionResizeMode(1, QHeaderView::Stretch);
  al->addWidget(pinned_, 1);
  setPage(AddonsPage, addons);

  // Plan.
  auto* planPage = new PlanWizardPage(this);
  planPage->setTitle(tr("Disk space"));
  planPage->setFinalPage(true);
  auto* pl = new QVBoxLayout(planPage);
  planTable_ = new QTreeWidget(planPage);
  planTable_->setObjectName(QStringLiteral("planTable"));
  planTable_->setRootIsDecorated(false);
  planTable_->setHeaderLabels({tr("Repository"), tr("Revision"), tr("Files"), tr("On disk"), tr("To download")});
  planTable_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  pl->addWidget(planTable_, 1);
  planSummary_ = new QLabel(planPage);
  planSummary_->setObjectName(QStringLiteral("planSummary"));
  planSummary_->setWordWrap(true);
  pl->addWidget(planSummary_);
  setPage(PlanPage, planPage);
  setButtonText(QWizard::FinishButton, tr("&Install in the background"));
  setStartId(WelcomePage);
  setPurpose(purpose);
}

void SetupWizard::updateFolderNotes() {
  freeLabel_->setText(tr("Free on this disk: %1").arg(formatBytes(freeDiskBytes(folder_->text()))));
  addonsNote_->setText(hasModel(folder_->text().trimmed())
                           ? tr("The add-ons go into this K3 install's addons folder; the model itself is not "
                                "touched.")
                           : tr("This folder holds no K3 install yet. The drafters are installed anyway, but "
                                "they only help once K3 is installed here."));
}

void SetupWizard::setPurpose(Purpose purpose) {
  purpose_ = purpose;
  const bool addons = purpose == Purpose::Addons;
  full_->setVisible(!addons);
  stream_->setVisible(!addons);
  addonsNote_->setVisible(addons);
  page(ModePage)->setTitle(addons ? tr("Which install gets the add-ons?") : tr("How should K3 be installed?"));
  setWindowTitle(addons ? tr("Install add-ons") : tr("Set up Deltafin"));
  if (addons) setStartId(ModePage);  // add-ons only: straight to the folder
  updateFolderNotes();
}

InstallRequest SetupWizard::request() const {
  InstallRequest r;
  r.k3 = purpose_ != Purpose::Addons;
  r.stream = r.k3 && stream_->isChecked();
  r.withDspark = dspark_->isChecked();
  r.withQwen = qwen_->isChecked();
  r.modelRoot = folder_->text().trimmed();
  r.hubUrl = hub_->text().trimmed();
  return r;
}

void SetupWizard::startPlanning() {
  planReady_ = false;
  planError_.clear();
  planTable_->clear();
  planSummary_->setText(tr("Asking the Hub for the file lists…"));
  static_cast<PlanWizardPage*>(page(PlanPage))->refresh();
  const InstallRequest req = request();
  const quint64 generation = ++planGeneration_;
  if (!req.k3 && !req.withDspark && !req.withQwen) {
    planError_ = tr("no add-on is chosen");
    planSummary_->setText(tr("Choose DSpark, Qwen3 or both on the previous page."));
    emit planFinished(false);
    return;
  }
  QPointer<SetupWizard> self(this);
  // Listing repositories is network work: it runs off the GUI thread.
  QThread* t = QThread::create([self, req, generation] {
    InstallPlanView plan;
    QString error;
    try {
      plan = planInstall(req);
    } catch (const Error& e) {
      error = QString::fromStdString(e.what_failed());
      if (!e.what_to_do().empty()) error += QStringLiteral(" — ") + QString::fromStdString(e.what_to_do());
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        self,
        [self, plan, error, generation] {
          if (!self || generation != self->planGeneration_) return;
          self->planError_ = error;
          self->plan_ = plan;
          self->planReady_ = error.isEmpty();
          if (!error.isEmpty()) {
            self->planSummary_->setText(tr("The plan failed: %1").arg(error));
          } else {
            for (const PlannedRepoView& r : plan.repos) {
              auto* item =
                  new QTreeWidgetItem(self->planTable_, {r.repo, r.revision.left(12), QString::number(r.files),
                                                         formatBytes(r.installBytes), formatBytes(r.missingBytes)});
              item->setToolTip(1, r.revision);
            }
            QString text =
                tr("Needed: %1 to download (%2 on disk in all). Free: %3.")
                    .arg(formatBytes(plan.missingBytes), formatBytes(plan.installBytes), formatBytes(plan.freeBytes));
            if (plan.cacheCap) text += tr(" Expert cache cap: %1.").arg(formatBytes(plan.cacheCap));
            if (plan.missingBytes > plan.freeBytes)
              text += tr(" This does not fit: choose another folder or a streaming install.");
            self->planSummary_->setText(text);
          }
          static_cast<PlanWizardPage*>(self->page(PlanPage))->refresh();
          emit self->planFinished(self->planReady_);
        },
        Qt::QueuedConnection);
  });
  connect(t, &QThread::finished, t, &QObject::deleteLater);
  t->start();
}

void SetupWizard::accept() {
  if (!planReady_) return;
  const InstallRequest req = request();
  QString title;
  if (!req.k3) {
    QStringList parts;
    if (req.withDspark) parts << tr("DSpark");
    if (req.withQwen) parts << tr("Qwen3");
    title = tr("Add-ons: %1").arg(parts.join(QStringLiteral(", ")));
  } else {
    studio_->settings().modelFolder = req.modelRoot;
    studio_->settings().wizardDone = true;
    studio_->saveSettings();
    title = req.stream ? tr("Streaming install of Kimi K3") : tr("Full install of Kimi K3");
  }
  jobId_ = studio_->jobs()->startInstall(title, req)->id();
  QWizard::accept();
}

}  // namespace deltafin::gui
