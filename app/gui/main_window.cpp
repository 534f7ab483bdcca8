#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QSplitter>
#include <QToolButton>
#include <QTabBar>
#include <QTabWidget>

#include "app_paths.h"
#include "bench_view.h"
#include "cache_view.h"
#include "chat_view.h"
#include "job_manager.h"
#include "jobs_view.h"
#include "local_engine.h"
#include "placement_bar.h"
#include "remote_chat_backend.h"
#include "server_process.h"
#include "settings_dialog.h"
#include "setup_wizard.h"
#include "status_panel.h"
#include "studio_icon.h"
#include "studio.h"
#include "upgrade_dialog.h"

namespace deltafin::gui {

MainWindow::MainWindow(Studio* studio, QWidget* parent) : QMainWindow(parent), studio_(studio) {
  setWindowTitle(tr("Deltafin Studio"));
  setWindowIcon(studioIcon());

  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  tabs_->setAccessibleName(tr("Pages"));
  tabs_->tabBar()->setAccessibleName(tr("Pages"));
  chat_ = new ChatView(studio_->conversations(), tabs_);
  chat_->setMaxNewTokens(studio_->settings().maxNewTokens);
  chat_->setEnterSends(studio_->settings().enterSends);
  jobs_ = new JobsView(studio_->jobs(), tabs_);
  cache_ = new CacheView(studio_, tabs_);
  bench_ = new BenchView(studio_->engine(), studio_->dataPath(QStringLiteral("bench-history.json")), tabs_);
  // The placement plan above the tier map, for the local engine's model; its measured speed is
  // the last reply's.
  auto* plan = new PlacementBar;
  cache_->setPlacementBar(plan);
  connect(studio_->engine(), &ChatBackend::ready, plan,
          [plan](const BackendInfo& info) { plan->planFor(info.modelRoot); });
  if (studio_->engine()->isReady()) plan->planFor(studio_->engine()->info().modelRoot);
  connect(studio_->engine(), &ChatBackend::finished, this, [this, plan](quint64, const GenerationStats& s) {
    if (s.decodeTokensPerSecond <= 0) return;
    measuredDecode_ = s.decodeTokensPerSecond;
    plan->setMeasured(measuredDecode_);
  });
  tabs_->addTab(chat_, tr("&Chat"));
  tabs_->addTab(jobs_, tr("&Jobs"));
  tabs_->addTab(cache_, tr("C&ache"));
  tabs_->addTab(bench_, tr("&Benchmark"));
  setCentralWidget(tabs_);

  status_ = new StatusPanel(this);
  setStatusBar(status_);
  buildMenus();
  connectBackend();
  connect(studio_, &Studio::chatBackendChanged, this, [this] { connectBackend(); });
  connect(studio_, &Studio::diskUsageChanged, status_, &StatusPanel::setDiskUsage);
  connect(studio_->server(), &ServerProcess::stateChanged, this,
          [this](bool, const QString& message) { status_->showMessage(message, 8000); });
  connect(studio_->jobs(), &JobManager::jobAdded, this, [this] { showPage(Page::Jobs); });
  // "Why CPU?" opens the settings at the device choice, where the reason is shown again.
  connect(status_, &StatusPanel::settingsRequested, this, [this] {
    SettingsDialog* dialog = openSettings();
    if (auto* device = dialog->findChild<QWidget*>(QStringLiteral("deviceCombo"))) device->setFocus();
  });
  if (!studio_->diskUsage().root.isEmpty()) status_->setDiskUsage(studio_->diskUsage());
  restoreLayout();
}

MainWindow::~MainWindow() { saveLayout(); }

void MainWindow::restoreLayout() {
  const StudioSettings& s = studio_->settings();
  if (s.windowGeometry.isEmpty() || !restoreGeometry(s.windowGeometry)) {
    // The first start: a comfortable size that still fits a 1280x720 screen with its panels.
    QSize size(1100, 680);
    if (const QScreen* screen = QGuiApplication::primaryScreen()) size = size.boundedTo(screen->availableSize() * 0.95);
    resize(size);
  }
  for (QSplitter* splitter : findChildren<QSplitter*>()) {
    const QByteArray state = s.splitters.value(splitter->objectName());
    if (!splitter->objectName().isEmpty() && !state.isEmpty()) splitter->restoreState(state);
  }
  chat_->optionsButton()->setChecked(s.chatOptionsOpen);
}

void MainWindow::saveLayout() {
  StudioSettings& s = studio_->settings();
  s.windowGeometry = saveGeometry();
  for (QSplitter* splitter : findChildren<QSplitter*>())
    if (!splitter->objectName().isEmpty()) s.splitters.insert(splitter->objectName(), splitter->saveState());
  s.chatOptionsOpen = chat_->optionsButton()->isChecked();
  studio_->saveSettings();
}

void MainWindow::connectBackend() {
  ChatBackend* backend = studio_->chatBackend();
  LocalEngine* engine = studio_->engine();
  chat_->setBackend(backend);
  for (QObject* o : {static_cast<QObject*>(engine), static_cast<QObject*>(studio_->remote())})
    disconnect(o, nullptr, status_, nullptr);
  connect(backend, &ChatBackend::ready, status_, &StatusPanel::setBackend);
  connect(backend, &ChatBackend::unavailable, status_, [this](const QString& what) { status_->setUnavailable(what); });
  connect(backend, &ChatBackend::finished, status_,
          [this](quint64, const GenerationStats& s) { status_->setTokensPerSecond(s.decodeTokensPerSecond); });
  connect(engine, &ChatBackend::countersChanged, status_, &StatusPanel::setCounters);
  connect(engine, &LocalEngine::loading, status_, &StatusPanel::setLoading);
  connect(engine, &LocalEngine::loadNote, status_, &StatusPanel::setLoadNote);
  if (backend->isReady()) status_->setBackend(backend->info());
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* newChat = file->addAction(tr("&New chat"));
  newChat->setShortcut(QKeySequence::New);
  connect(newChat, &QAction::triggered, chat_, &ChatView::newConversation);
  QAction* importChat = file->addAction(tr("&Import chat…"));
  connect(importChat, &QAction::triggered, chat_, &ChatView::importWithDialog);
  QAction* exportMd = file->addAction(tr("Export chat as &Markdown…"));
  connect(exportMd, &QAction::triggered, chat_, [this] { chat_->exportCurrent(QStringLiteral("markdown")); });
  QAction* exportJson = file->addAction(tr("Export chat as &JSON…"));
  connect(exportJson, &QAction::triggered, chat_, [this] { chat_->exportCurrent(QStringLiteral("json")); });
  file->addSeparator();
  QAction* wizard = file->addAction(tr("&Setup wizard…"));
  connect(wizard, &QAction::triggered, this, &MainWindow::openSetupWizard);
  QAction* addons = file->addAction(tr("Install &add-ons…"));
  addons->setObjectName(QStringLiteral("addonsAction"));
  connect(addons, &QAction::triggered, this, &MainWindow::openAddonsWizard);
  QAction* upgrade = file->addAction(tr("&Upgrade Deltafin…"));
  upgrade->setObjectName(QStringLiteral("upgradeAction"));
  connect(upgrade, &QAction::triggered, this, &MainWindow::openUpgradeDialog);
  QAction* settings = file->addAction(tr("S&ettings…"));
  settings->setShortcut(QKeySequence::Preferences);
  settings->setObjectName(QStringLiteral("settingsAction"));
  connect(settings, &QAction::triggered, this, &MainWindow::openSettings);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, qApp, &QApplication::quit);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  const QList<QPair<QString, Page>> pages = {{tr("&Chat"), Page::Chat},
                                             {tr("&Jobs"), Page::Jobs},
                                             {tr("C&ache"), Page::Cache},
                                             {tr("&Benchmark"), Page::Bench}};
  for (int i = 0; i < pages.size(); ++i) {
    QAction* a = view->addAction(pages[i].first);
    a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    const Page page = pages[i].second;
    connect(a, &QAction::triggered, this, [this, page] { showPage(page); });
  }

  QMenu* language = menuBar()->addMenu(tr("&Language"));
  auto* group = new QActionGroup(language);
  for (const auto& [code, name] : availableLanguages()) {
    QAction* a = language->addAction(name);
    a->setCheckable(true);
    a->setChecked(code == studio_->settings().language);
    group->addAction(a);
    const QString c = code;
    connect(a, &QAction::triggered, this, [this, c] { emit languageRequested(c); });
  }

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* about = help->addAction(tr("&About Deltafin"));
  connect(about, &QAction::triggered, this, [this] {
    QMessageBox::about(this, tr("About Deltafin"),
                       tr("<b>Deltafin Studio %1</b><p>The full Kimi K3 on one machine: every weight exactly as "
                          "shipped, streamed from disk into RAM and VRAM caches.</p>")
                           .arg(QApplication::applicationVersion()));
  });
}

void MainWindow::showPage(Page page) { tabs_->setCurrentIndex(static_cast<int>(page)); }

SetupWizard* MainWindow::openSetupWizard() {
  auto* wizard = new SetupWizard(studio_, this);
  wizard->setAttribute(Qt::WA_DeleteOnClose);
  wizard->open();
  return wizard;
}

SetupWizard* MainWindow::openAddonsWizard() {
  auto* wizard = new SetupWizard(studio_, this, SetupWizard::Purpose::Addons);
  wizard->setAttribute(Qt::WA_DeleteOnClose);
  wizard->open();
  return wizard;
}

UpgradeDialog* MainWindow::openUpgradeDialog() {
  auto* dialog = new UpgradeDialog(studio_, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
  return dialog;
}

SettingsDialog* MainWindow::openSettings() {
  // Window-modal but not blocking: the engine keeps streaming while the dialog is open.
  auto* dialog = new SettingsDialog(studio_->settings(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  if (studio_->engine()->isReady()) dialog->placementBar()->planFor(studio_->engine()->info().modelRoot);
  dialog->placementBar()->setMeasured(measuredDecode_);
  connect(dialog, &QDialog::accepted, this, [this, dialog] {
    const StudioSettings next = dialog->result();
    const bool languageChanged = next.language != studio_->settings().language;
    studio_->settings() = next;
    chat_->setMaxNewTokens(next.maxNewTokens);
    chat_->setEnterSends(next.enterSends);
    studio_->applySettings();
    if (languageChanged) emit languageRequested(next.language);
  });
  dialog->open();
  return dialog;
}

}  // namespace deltafin::gui
