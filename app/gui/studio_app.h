#pragma once
// The running app: Studio, the language, and the main window (rebuilt when the language
// changes, which retranslates every string without a restart).
#include <QObject>
#include <QPointer>

#include "language.h"
#include "main_window.h"
#include "studio.h"

namespace deltafin::gui {

class StudioApp : public QObject {
  Q_OBJECT
 public:
  explicit StudioApp(Studio::Options options, QObject* parent = nullptr);
  ~StudioApp() override;

  // Shows the window and starts the engine, or the setup wizard on first run.
  void start();
  Studio* studio() const { return studio_; }
  MainWindow* window() const { return window_; }
  Language* language() const { return language_; }
  void switchLanguage(const QString& code);

 private:
  void createWindow();

  Studio* studio_ = nullptr;
  Language* language_ = nullptr;
  QPointer<MainWindow> window_;
};

}  // namespace deltafin::gui
