#include "screenshot.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTextStream>
#include <QTimer>
#include <QWizard>

#include "app_paths.h"
#include "bench_view.h"
#include "cache_view.h"
#include "chat_view.h"
#include "install_job.h"
#include "job_manager.h"
#include "local_engine.h"
#include "main_window.h"
#include "settings_dialog.h"
#include "setup_wizard.h"
#include "studio_app.h"

namespace deltafin::gui {
namespace {

constexpr int kWaitMs = 300000;  // a cold model load plus a reply on a slow machine

// Runs the event loop until `signal` fires or the wait ends; false on timeout.
template <typename Sender, typename Signal>
bool waitFor(Sender* sender, Signal signal, int ms = kWaitMs) {
  QEventLoop loop;
  QTimer timer;
  timer.setSingleShot(true);
  QObject::connect(&timer, &QTimer::timeout, &loop, [&] { loop.exit(1); });
  QObject::connect(sender, signal, &loop, [&] { loop.exit(0); });
  timer.start(ms);
  return loop.exec() == 0;
}

bool waitForEngine(LocalEngine* engine, QTextStream& err) {
  if (engine->isReady()) return true;
  QString failure;
  QMetaObject::Connection c = QObject::connect(engine, &ChatBackend::unavailable, engine,
                                               [&](const QString& what, const QString&) { failure = what; });
  QEventLoop loop;
  QObject::connect(engine, &ChatBackend::ready, &loop, [&] { loop.exit(0); });
  QObject::connect(engine, &ChatBackend::unavailable, &loop, [&] { loop.exit(1); });
  QTimer::singleShot(kWaitMs, &loop, [&] { loop.exit(2); });
  const int rc = loop.exec();
  QObject::disconnect(c);
  if (rc != 0) err << "deltafin-studio: the model did not load: " << (failure.isEmpty() ? "timeout" : failure) << "\n";
  return rc == 0;
}

void settle() {
  // Layouts and the per-frame text renderer need a few event-loop turns.
  QEventLoop loop;
  QTimer::singleShot(250, &loop, &QEventLoop::quit);
  loop.exec();
}

}  // namespace

QStringList screenshotViews() {
  return {QStringLiteral("chat"),  QStringLiteral("setup"), QStringLiteral("jobs"),
          QStringLiteral("cache"), QStringLiteral("bench"), QStringLiteral("settings")};
}

int takeScreenshot(StudioApp& app, const ScreenshotOptions& options) {
  const QString& view = options.view;
  const QString& file = options.file;
  QTextStream err(stderr);
  Studio* studio = app.studio();
  // With nothing installed, the views show the bundled demo model rather than an empty window.
  if (view != QLatin1String("setup") && studio->needsFirstRun() && !bundledDemoModel().isEmpty())
    studio->settings().useDemo = true;
  app.start();
  MainWindow* w = app.window();
  w->resize(1280, 720);  // the smallest screen the window is made for (test_gui_layout)
  QWidget* target = w;

  if (view == QLatin1String("chat")) {
    w->showPage(MainWindow::Page::Chat);
    if (!waitForEngine(studio->engine(), err)) return 1;
    ChatView* chat = w->chatView();
    chat->newConversation();
    chat->input()->setPlainText(options.prompt);
    chat->send();
    if (chat->isGenerating() && !waitFor(chat, &ChatView::generatingChanged)) {
      err << "deltafin-studio: the reply did not finish\n";
      return 1;
    }
  } else if (view == QLatin1String("setup")) {
    auto* wizard = new SetupWizard(studio, w);
    wizard->resize(760, 560);
    wizard->show();
    wizard->next();
    if (!options.hubUrl.isEmpty()) {
      // Through to the plan page, with real sizes from the hub.
      if (auto* hub = wizard->findChild<QLineEdit*>(QStringLiteral("hubUrl"))) hub->setText(options.hubUrl);
      if (auto* folder = wizard->findChild<QLineEdit*>(QStringLiteral("modelFolder")))
        folder->setText(studio->dataPath(QStringLiteral("models/kimi-k3")));
      wizard->next();
      wizard->next();
      if (!waitFor(wizard, &SetupWizard::planFinished)) {
        err << "deltafin-studio: the install plan did not arrive\n";
        return 1;
      }
    }
    target = wizard;
  } else if (view == QLatin1String("jobs")) {
    w->showPage(MainWindow::Page::Jobs);
    if (!options.hubUrl.isEmpty()) {
      // A real install from the given hub, caught while it transfers (speed and ETA visible).
      InstallRequest req;
      req.modelRoot = studio->dataPath(QStringLiteral("models/kimi-k3"));
      req.hubUrl = options.hubUrl;
      InstallJob* job = studio->jobs()->startInstall(
          QCoreApplication::translate("deltafin::gui::SetupWizard", "Full install of Kimi K3"), req);
      QEventLoop loop;
      QObject::connect(job, &InstallJob::changed, &loop, [&] {
        if (!job->isActive() || (job->progress().bytesDone > 0 && job->progress().bytesPerSecond > 0 &&
                                 job->progress().bytesDone * 3 > job->progress().bytesTotal))
          loop.quit();
      });
      QTimer::singleShot(kWaitMs, &loop, &QEventLoop::quit);
      loop.exec();
    }
  } else if (view == QLatin1String("cache")) {
    w->showPage(MainWindow::Page::Cache);
    if (!waitForEngine(studio->engine(), err)) return 1;
    // A short run first, so the per-tier counters (and a stream cache) show real lookups.
    studio->engine()->runBench({QStringLiteral("warm-up"), 16, 8, 1});
    QEventLoop bench;
    QObject::connect(studio->engine(), &LocalEngine::benchResult, &bench, &QEventLoop::quit);
    QObject::connect(studio->engine(), &LocalEngine::benchFailed, &bench, &QEventLoop::quit);
    QTimer::singleShot(kWaitMs, &bench, &QEventLoop::quit);
    bench.exec();
    w->cacheView()->refresh();
    if (!waitFor(w->cacheView(), &CacheView::snapshotUpdated)) {
      err << "deltafin-studio: the cache snapshot did not arrive\n";
      return 1;
    }
  } else if (view == QLatin1String("bench")) {
    w->showPage(MainWindow::Page::Bench);
    if (!waitForEngine(studio->engine(), err)) return 1;
    BenchView* bench = w->benchView();
    QList<BenchArm> arms = BenchView::defaultArms();
    for (BenchArm& a : arms) a.repeats = 1;
    bench->runArms(arms);
    if (bench->isRunning() && !waitFor(bench, &BenchView::runFinished)) {
      err << "deltafin-studio: the benchmark did not finish\n";
      return 1;
    }
  } else if (view == QLatin1String("settings")) {
    // The dialog over the main window, once the engine has loaded (the device note is real).
    if (!waitForEngine(studio->engine(), err)) return 1;
    SettingsDialog* dialog = w->openSettings();
    dialog->adjustSize();
    target = dialog;
  } else {
    err << "deltafin-studio: unknown view '" << view << "' (choose " << screenshotViews().join(", ") << ")\n";
    return 2;
  }
  settle();
  if (!target->grab().save(file, "PNG")) {
    err << "deltafin-studio: cannot write " << file << "\n";
    return 1;
  }
  return 0;
}

}  // namespace deltafin::gui
