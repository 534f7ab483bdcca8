#include "studio_app.h"

#include <QTabWidget>
#include <QTimer>

#include "job_manager.h"
#include "main_window.h"

namespace deltafin::gui {

StudioApp::StudioApp(Studio::Options options, QObject* parent) : QObject(parent) {
  studio_ = new Studio(std::move(options), this);
  language_ = new Language(this);
  language_->apply(studio_->settings().language);
}

StudioApp::~StudioApp() { delete window_; }

void StudioApp::createWindow() {
  QByteArray geometry;
  int page = 0;
  if (window_) {
    window_->saveLayout();  // the new window restores the splitters from the settings
    geometry = window_->saveGeometry();
    page = window_->findChild<QTabWidget*>() ? window_->findChild<QTabWidget*>()->currentIndex() : 0;
    window_->deleteLater();
  }
  window_ = new MainWindow(studio_);
  connect(window_, &MainWindow::languageRequested, this, &StudioApp::switchLanguage);
  if (!geometry.isEmpty()) window_->restoreGeometry(geometry);
  window_->showPage(static_cast<MainWindow::Page>(page));
  window_->show();
}

void StudioApp::start() {
  createWindow();
  studio_->jobs()->resumeInterrupted();
  studio_->applyServerSetting();
  if (studio_->needsFirstRun()) {
    QTimer::singleShot(0, window_, &MainWindow::openSetupWizard);
  } else {
    studio_->startEngine();
  }
  studio_->refreshDiskUsage();
}

void StudioApp::switchLanguage(const QString& code) {
  studio_->settings().language = code;
  studio_->saveSettings();
  language_->apply(code);
  // Rebuilt from the next event loop turn: the request may come from inside the old window.
  QTimer::singleShot(0, this, &StudioApp::createWindow);
}

}  // namespace deltafin::gui
