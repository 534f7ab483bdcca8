#pragma once
// The main window: Chat, Jobs, Cache and Benchmark pages, menus for setup, settings and
// language, and the status bar. All state lives in Studio, so the window can be rebuilt.
#include <QMainWindow>

class QTabWidget;

namespace deltafin::gui {

class BenchView;
class SettingsDialog;
class SetupWizard;
class UpgradeDialog;
class CacheView;
class ChatView;
class JobsView;
class StatusPanel;
class Studio;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum class Page { Chat, Jobs, Cache, Bench };

  explicit MainWindow(Studio* studio, QWidget* parent = nullptr);
  ~MainWindow() override;  // keeps the geometry and splitter positions for the next window

  void showPage(Page page);
  ChatView* chatView() const { return chat_; }
  JobsView* jobsView() const { return jobs_; }
  CacheView* cacheView() const { return cache_; }
  BenchView* benchView() const { return bench_; }
  StatusPanel* statusPanel() const { return status_; }
  // Geometry, splitter positions and the chat panel into the settings (saved to disk).
  void saveLayout();

 public slots:
  SetupWizard* openSetupWizard();
  SetupWizard* openAddonsWizard();  // the drafters only, into an existing install
  UpgradeDialog* openUpgradeDialog();
  SettingsDialog* openSettings();

 signals:
  void languageRequested(const QString& code);  // "" follows the system

 private:
  void buildMenus();
  void restoreLayout();
  void connectBackend();

  Studio* studio_;
  QTabWidget* tabs_ = nullptr;
  ChatView* chat_ = nullptr;
  JobsView* jobs_ = nullptr;
  CacheView* cache_ = nullptr;
  BenchView* bench_ = nullptr;
  StatusPanel* status_ = nullptr;
  double measuredDecode_ = 0;  // the local engine's last reply, decode tok/s
};

}  // namespace deltafin::gui
