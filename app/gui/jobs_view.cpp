#include "jobs_view.h"

#include <QCoreApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTextCursor>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "formatting.h"
#include "job_manager.h"

namespace deltafin::gui {
namespace {

QString progressText(const InstallProgressView& p) {
  if (p.bytesTotal == 0) return QString();
  return QCoreApplication::translate("JobsView", "%1 of %2").arg(formatBytes(p.bytesDone), formatBytes(p.bytesTotal));
}

int percent(const InstallProgressView& p) {
  return p.bytesTotal ? static_cast<int>(p.bytesDone * 1000 / p.bytesTotal) : 0;
}

}  // namespace

JobsView::JobsView(JobManager* jobs, QWidget* parent) : QWidget(parent), jobs_(jobs) {
  auto* layout = new QVBoxLayout(this);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  layout->addWidget(splitter);

  auto* top = new QWidget(splitter);
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  list_ = new QTreeWidget(top);
  list_->setObjectName(QStringLiteral("jobList"));
  list_->setAccessibleName(tr("Jobs"));
  list_->setRootIsDecorated(false);
  list_->setHeaderLabels({tr("Job"), tr("State"), tr("Progress"), tr("Speed"), tr("Time left")});
  list_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  topLayout->addWidget(list_);
  empty_ = new QLabel(tr("No jobs yet. Setup, upgrades and add-on installs run here in the background."), top);
  empty_->setAlignment(Qt::AlignCenter);
  topLayout->addWidget(empty_);
  splitter->addWidget(top);

  auto* details = new QWidget(splitter);
  auto* d = new QVBoxLayout(details);
  title_ = new QLabel(details);
  title_->setObjectName(QStringLiteral("jobTitle"));
  d->addWidget(title_);
  bar_ = new QProgressBar(details);
  bar_->setRange(0, 1000);
  d->addWidget(bar_);
  detail_ = new QLabel(details);
  d->addWidget(detail_);
  error_ = new QLabel(details);
  error_->setObjectName(QStringLiteral("jobError"));
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  d->addWidget(error_);
  auto* buttons = new QHBoxLayout;
  pause_ = new QPushButton(tr("&Pause"), details);
  resume_ = new QPushButton(tr("&Resume"), details);
  cancel_ = new QPushButton(tr("&Cancel job"), details);
  remove_ = new QPushButton(tr("Re&move from list"), details);
  buttons->addWidget(pause_);
  buttons->addWidget(resume_);
  buttons->addWidget(cancel_);
  buttons->addStretch(1);
  buttons->addWidget(remove_);
  d->addLayout(buttons);
  log_ = new QPlainTextEdit(details);
  log_->setObjectName(QStringLiteral("jobLog"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(1000);
  log_->setAccessibleName(tr("Job log"));
  log_->setAccessibleName(tr("Job log"));
  d->addWidget(log_, 1);
  splitter->addWidget(details);

  connect(pause_, &QPushButton::clicked, this, [this] {
    if (auto* j = selected()) j->pause();
  });
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (auto* j = selected()) j->resume();
  });
  connect(cancel_, &QPushButton::clicked, this, [this] {
    if (auto* j = selected()) j->cancel();
  });
  connect(remove_, &QPushButton::clicked, this, [this] {
    if (auto* j = selected()) jobs_->remove(j->id());
  });
  connect(list_, &QTreeWidget::currentItemChanged, this, &JobsView::showDetails);
  connect(jobs_, &JobManager::jobAdded, this, [this](InstallJob* j) {
    rebuild();
    select(j->id());
  });
  connect(jobs_, &JobManager::jobRemoved, this, &JobsView::rebuild);
  connect(jobs_, &JobManager::jobChanged, this, [this](InstallJob* j) {
    refreshRow(j);
    if (selected() == j) showDetails();
  });
  rebuild();
}

QTreeWidgetItem* JobsView::itemFor(const QString& id) const {
  for (int i = 0; i < list_->topLevelItemCount(); ++i)
    if (list_->topLevelItem(i)->data(0, Qt::UserRole).toString() == id) return list_->topLevelItem(i);
  return nullptr;
}

InstallJob* JobsView::selected() const {
  const QTreeWidgetItem* item = list_->currentItem();
  return item ? jobs_->find(item->data(0, Qt::UserRole).toString()) : nullptr;
}

QString JobsView::selectedId() const {
  const InstallJob* j = selected();
  return j ? j->id() : QString();
}

void JobsView::select(const QString& id) {
  if (QTreeWidgetItem* item = itemFor(id)) list_->setCurrentItem(item);
}

void JobsView::rebuild() {
  const QString keep = selectedId();
  list_->clear();
  for (InstallJob* j : jobs_->jobs()) {
    auto* item = new QTreeWidgetItem(list_);
    item->setData(0, Qt::UserRole, j->id());
    refreshRow(j);
  }
  empty_->setVisible(jobs_->jobs().isEmpty());
  list_->setVisible(!jobs_->jobs().isEmpty());
  if (!keep.isEmpty()) select(keep);
  if (!list_->currentItem() && list_->topLevelItemCount() > 0) list_->setCurrentItem(list_->topLevelItem(0));
  showDetails();
}

void JobsView::refreshRow(InstallJob* j) {
  QTreeWidgetItem* item = itemFor(j->id());
  if (!item) return;
  const InstallProgressView& p = j->progress();
  item->setText(0, j->title());
  item->setText(1, j->stateText());
  item->setText(2, p.bytesTotal ? formatPercent(static_cast<double>(p.bytesDone) / p.bytesTotal) : QString());
  const bool running = j->state() == InstallJob::State::Running;
  item->setText(3, running ? formatSpeed(p.bytesPerSecond) : QString());
  item->setText(4, running ? formatDuration(p.etaSeconds) : QString());
}

void JobsView::showDetails() {
  InstallJob* j = selected();
  const bool has = j != nullptr;
  for (QWidget* w : std::initializer_list<QWidget*>{title_, bar_, detail_, log_, pause_, resume_, cancel_, remove_})
    w->setVisible(has);
  error_->setVisible(has && !j->errorWhat().isEmpty() && j->state() == InstallJob::State::Failed);
  if (!has) return;
  using S = InstallJob::State;
  const InstallProgressView& p = j->progress();
  title_->setText(QStringLiteral("<b>%1</b> — %2").arg(j->title().toHtmlEscaped(), j->stateText()));
  // An upgrade has steps, not bytes: a busy bar while it runs.
  const bool busy = j->isUpgrade() && j->isActive();
  bar_->setRange(0, busy ? 0 : 1000);
  bar_->setValue(j->isUpgrade() ? (j->state() == S::Done ? 1000 : 0) : percent(p));
  QString text = j->isUpgrade() ? j->outcome() : progressText(p);
  if (j->state() == S::Running && !j->isUpgrade()) {
    text += tr(" · %1 · %2 left").arg(formatSpeed(p.bytesPerSecond), formatDuration(p.etaSeconds));
    if (p.filesTotal) text += tr(" · file %1 of %2").arg(p.filesDone).arg(p.filesTotal);
    if (!p.current.isEmpty()) text += QStringLiteral("\n") + p.current;
  }
  detail_->setText(text);
  error_->setText(tr("<b>What failed:</b> %1<br><b>What to do:</b> %2")
                      .arg(j->errorWhat().toHtmlEscaped(),
                           (j->errorTodo().isEmpty() ? tr("see the log below") : j->errorTodo()).toHtmlEscaped()));
  pause_->setEnabled(j->canPause() && (j->state() == S::Running || j->state() == S::Queued));
  pause_->setToolTip(j->canPause() ? QString() : tr("An upgrade runs git and CMake to the end of each step"));
  resume_->setEnabled(j->state() == S::Paused || j->state() == S::Failed || j->state() == S::Cancelled);
  cancel_->setEnabled(!(j->isUpgrade() && j->isActive()) &&
                      (j->state() == S::Running || j->state() == S::Paused || j->state() == S::Queued ||
                       j->state() == S::Failed || j->state() == S::Pausing));
  remove_->setEnabled(!j->isActive());
  const QString joined = j->log().join('\n');
  if (log_->toPlainText() != joined) {
    log_->setPlainText(joined);
    log_->moveCursor(QTextCursor::End);
  }
}

}  // namespace deltafin::gui
