// Every view of the main window and every dialog fits a 1280x720 and a 1920x1080 screen in each
// shipped language: the window's minimum size is within the screen, the window takes the screen's
// size, and no button ends up outside it. Each view is rendered to a PNG at both sizes (kept in
// $DELTAFIN_LAYOUT_SHOTS when set, for a look by eye).
#include <QAbstractButton>
#include <QAccessible>
#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QDir>
#include <QSet>
#include <QSignalSpy>
#include <QTabBar>
#include <QTabWidget>
#include <QToolButton>
#include <QWizard>

#include "chat_view.h"
#include "install_job.h"
#include "job_manager.h"
#include "language.h"
#include "local_engine.h"
#include "main_window.h"
#include "settings_dialog.h"
#include "setup_wizard.h"
#include "status_panel.h"
#include "studio.h"
#include "support/test_support.h"
#include "upgrade_dialog.h"

using namespace deltafin::gui;
namespace T = deltafin::test;

namespace {

const QList<QSize> kScreens = {{1280, 720}, {1920, 1080}};

QString shotDir() {
  static const QString dir = [] {
    QString d = qEnvironmentVariable("DELTAFIN_LAYOUT_SHOTS");
    if (d.isEmpty()) d = QString::fromStdString(T::temp_dir("gui-layout-shots"));
    QDir().mkpath(d);
    return d;
  }();
  return dir;
}

bool insideScrollArea(const QWidget* w, const QWidget* top) {
  for (const QWidget* p = w->parentWidget(); p && p != top; p = p->parentWidget())
    if (qobject_cast<const QAbstractScrollArea*>(p)) return true;
  return false;
}

// Buttons (and the chat input) outside `top`'s rectangle: cut off on that screen. Widgets inside
// scroll areas scroll into view and are left out.
QStringList cutOff(QWidget* top) {
  QStringList out;
  const QRect frame = top->rect();
  for (QWidget* w : top->findChildren<QWidget*>()) {
    if (!w->isVisibleTo(top) || insideScrollArea(w, top)) continue;
    if (!qobject_cast<QAbstractButton*>(w) && w->objectName() != QLatin1String("chatInput")) continue;
    const QRect r(w->mapTo(top, QPoint(0, 0)), w->size());
    if (!frame.contains(r))
      out << QStringLiteral("%1 '%2' at %3,%4 %5x%6")
                 .arg(QString::fromLatin1(w->metaObject()->className()),
                      w->objectName().isEmpty() ? w->property("text").toString() : w->objectName())
                 .arg(r.x())
                 .arg(r.y())
                 .arg(r.width())
                 .arg(r.height());
  }
  return out;
}

// Focusable controls a screen reader would announce without a name.
QStringList unnamed(QWidget* top) {
  QStringList out;
  for (QWidget* w : top->findChildren<QWidget*>()) {
    if (!w->isVisibleTo(top) || !(w->focusPolicy() & Qt::TabFocus)) continue;
    if (qobject_cast<QAbstractSpinBox*>(w->parentWidget())) continue;  // the spin box's own editor
    QAccessibleInterface* a = QAccessible::queryAccessibleInterface(w);
    if (a && a->text(QAccessible::Name).trimmed().isEmpty())
      out << QStringLiteral("%1 '%2'").arg(QString::fromLatin1(w->metaObject()->className()), w->objectName());
  }
  return out;
}

QString sizeText(QSize s) { return QStringLiteral("%1x%2").arg(s.width()).arg(s.height()); }

// The window's own minimum: the larger of its minimum size hint and an explicit minimum size.
QSize minimumOf(const QWidget* w) { return w->minimumSizeHint().expandedTo(w->minimumSize()); }

void settle() {
  for (int i = 0; i < 5; ++i) {
    QApplication::processEvents();
    QTest::qWait(20);
  }
}

// Shows `top` at `screen` (or its preferred size within it, for dialogs) and checks that it fits.
void checkFits(QWidget* top, QSize screen, const QString& name, bool fillScreen) {
  const QSize min = minimumOf(top);
  QVERIFY2(min.width() <= screen.width() && min.height() <= screen.height(),
           qPrintable(
               QStringLiteral("%1: minimum size %2 exceeds the %3 screen").arg(name, sizeText(min), sizeText(screen))));
  top->resize(fillScreen ? screen : top->sizeHint().boundedTo(screen).expandedTo(min));
  settle();
  QVERIFY2(top->width() <= screen.width() && top->height() <= screen.height(),
           qPrintable(QStringLiteral("%1: %2 on a %3 screen").arg(name, sizeText(top->size()), sizeText(screen))));
  if (fillScreen) QCOMPARE(top->size(), screen);
  const QStringList cut = cutOff(top);
  QVERIFY2(cut.isEmpty(), qPrintable(name + QStringLiteral(": cut off: ") + cut.join(QStringLiteral("; "))));
  const QString file = shotDir() + QStringLiteral("/%1-%2.png").arg(name, sizeText(screen));
  QVERIFY2(top->grab().save(file, "PNG"), qPrintable(file));
}

}  // namespace

class TestGuiLayout : public QObject {
  Q_OBJECT

  QString jobsFile_;

  QString demoModel() const { return QString::fromStdString(T::build_dir() + "/demo-model"); }

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(demoModel() + "/config.json"), qPrintable("demo model missing at " + demoModel()));
    // A failed job with its explanation, for the jobs page of every language (jobs.json is read
    // at start): made once, since the failing connection takes its time.
    jobsFile_ = QString::fromStdString(T::temp_dir("gui-layout-jobs")) + "/jobs.json";
    JobManager jobs(jobsFile_);
    InstallRequest req;
    req.modelRoot = QFileInfo(jobsFile_).absolutePath() + QStringLiteral("/models/kimi-k3");
    req.hubUrl = QStringLiteral("http://127.0.0.1:1");  // nothing listens on port 1
    InstallJob* job = jobs.startInstall(QStringLiteral("Full install of Kimi K3"), req);
    QTRY_VERIFY_WITH_TIMEOUT(!job->isActive(), 120000);
    QCOMPARE(job->state(), InstallJob::State::Failed);
  }

  void everyViewFitsEveryScreen_data() {
    QTest::addColumn<QString>("language");
    QTest::newRow("en") << QStringLiteral("en");
    QTest::newRow("de") << QStringLiteral("de");
    QTest::newRow("zh_CN") << QStringLiteral("zh_CN");
  }

  void everyViewFitsEveryScreen() {
    QFETCH(QString, language);
    Language lang;
    QCOMPARE(lang.apply(language), language);
    const QString data = QString::fromStdString(T::temp_dir(("gui-layout-" + language).toStdString()));
    QVERIFY(QFile::copy(jobsFile_, data + QStringLiteral("/jobs.json")));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    QSignalSpy failed(studio.engine(), &ChatBackend::unavailable);
    QTRY_VERIFY_WITH_TIMEOUT(studio.engine()->isReady() || failed.count() > 0, 180000);
    QVERIFY(studio.engine()->isReady());

    // The worst case users met: a CUDA build on a machine whose driver is too old, with a drafter,
    // every tier counted, and the failed job with its explanation on the jobs page.
    BackendInfo info = studio.engine()->info();
    info.name = QStringLiteral("CPU");
    info.fallbackReason = QStringLiteral(
        "no usable NVIDIA GPU: no usable CUDA device: CUDA driver version is insufficient for CUDA runtime version");
    info.drafter = QStringLiteral("ngram");
    info.drafterNote =
        QStringLiteral("n-gram: no DSpark or Qwen3 drafter is installed in %1/addons").arg(info.modelRoot);
    window.statusPanel()->setBackend(info);
    CacheCounters counters;
    counters.requests = 123456;
    counters.hasVram = true;
    counters.vramHits = 61728;
    counters.ramHits = 40000;
    counters.diskReads = 21728;
    counters.netFetches = 1234;
    window.statusPanel()->setCounters(counters);
    QCOMPARE(studio.jobs()->jobs().size(), 1);

    // The chat with its side panel open: the widest the chat page gets.
    window.chatView()->optionsButton()->setChecked(true);
    auto* tabs = window.findChild<QTabWidget*>();
    QVERIFY(tabs);
    const QStringList pages = {QStringLiteral("chat"), QStringLiteral("jobs"), QStringLiteral("cache"),
                               QStringLiteral("bench")};
    QCOMPARE(tabs->count(), pages.size());
    for (int i = 0; i < pages.size(); ++i) {
      window.showPage(static_cast<MainWindow::Page>(i));
      for (const QSize& screen : kScreens) {
        checkFits(&window, screen, language + QLatin1Char('-') + pages[i], true);
        if (QTest::currentTestFailed()) return;
      }
      const QStringList nameless = unnamed(&window);
      QVERIFY2(nameless.isEmpty(),
               qPrintable(pages[i] + QStringLiteral(": no accessible name: ") + nameless.join(QStringLiteral("; "))));
    }

    for (const QSize& screen : kScreens) {
      SettingsDialog settings(studio.settings(), &window);
      settings.show();
      checkFits(&settings, screen, language + QStringLiteral("-settings"), false);
      if (QTest::currentTestFailed()) return;

      UpgradeDialog upgrade(&studio, &window);
      upgrade.show();
      checkFits(&upgrade, screen, language + QStringLiteral("-upgrade"), false);
      if (QTest::currentTestFailed()) return;

      for (SetupWizard::Purpose purpose : {SetupWizard::Purpose::Setup, SetupWizard::Purpose::Addons}) {
        SetupWizard wizard(&studio, &window, purpose);
        wizard.show();
        const QString name =
            language + (purpose == SetupWizard::Purpose::Setup ? QStringLiteral("-setup") : QStringLiteral("-addons"));
        // Every page before the plan (which asks a hub; never the real one from a test).
        for (;;) {
          checkFits(&wizard, screen, name + QString::number(wizard.currentId()), false);
          if (QTest::currentTestFailed() || wizard.nextId() == SetupWizard::PlanPage || wizard.nextId() < 0) break;
          wizard.next();
        }
        if (QTest::currentTestFailed()) return;
      }
    }
  }

  // Tab and Shift+Tab alone reach every control of every page, and Ctrl+1..4 switch pages.
  void keyboardReachesEveryControl() {
    Language lang;
    lang.apply(QStringLiteral("en"));
    const QString data = QString::fromStdString(T::temp_dir("gui-layout-keys"));
    QVERIFY(QFile::copy(jobsFile_, data + QStringLiteral("/jobs.json")));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.chatView()->optionsButton()->setChecked(true);
    window.resize(1280, 720);
    window.show();
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    studio.startEngine();
    QTRY_VERIFY_WITH_TIMEOUT(studio.engine()->isReady(), 180000);
    auto* tabs = window.findChild<QTabWidget*>();
    for (int page = 0; page < tabs->count(); ++page) {
      QTest::keyClick(&window, static_cast<Qt::Key>(Qt::Key_1 + page), Qt::ControlModifier);
      QCOMPARE(tabs->currentIndex(), page);
      settle();
      tabs->tabBar()->setFocus();
      QSet<QWidget*> reached;
      for (int i = 0; i < 200; ++i) {
        QWidget* focus = QApplication::focusWidget();
        QVERIFY(focus);
        reached.insert(focus);
        QTest::keyClick(focus, Qt::Key_Tab);
        if (QApplication::focusWidget() == tabs->tabBar()) break;
      }
      QStringList missed;
      for (QWidget* w : tabs->currentWidget()->findChildren<QWidget*>()) {
        if (!w->isVisible() || !w->isEnabled() || (w->focusPolicy() & Qt::TabFocus) != Qt::TabFocus) continue;
        if (qobject_cast<QAbstractSpinBox*>(w->parentWidget())) continue;
        QWidget* proxy = w->focusProxy() ? w->focusProxy() : w;
        if (!reached.contains(proxy) && !reached.contains(w))
          missed << QStringLiteral("%1 '%2'").arg(QString::fromLatin1(w->metaObject()->className()), w->objectName());
      }
      QVERIFY2(missed.isEmpty(),
               qPrintable(QStringLiteral("page %1: Tab never reaches %2").arg(page).arg(missed.join(", "))));
    }
  }
};

QTEST_MAIN(TestGuiLayout)
#include "test_gui_layout.moc"
