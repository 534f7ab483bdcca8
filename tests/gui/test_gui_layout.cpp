// Every view of the main window and every dialog fits a 1280x720 and a 1920x1080 screen in each
// shipped language: the window's minimum size is within the screen, the window takes the screen's
// size, and no button ends up outside it. Each view is rendered to a PNG at both sizes (kept in
// $DELTAFIN_LAYOUT_SHOTS when set, for a look by eye).
#include <QAbstractButton>
#include <QAccessible>
#include <QAbstractScrollArea>
#include <QApplication>
#include <QDir>
#include <QSignalSpy>
#include <QTabWidget>
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
                 .arg(QString::fromLatin1(w->metaObject()->className()), w->objectName().isEmpty()
                                                                           ? w->property("text").toString()
                                                                           : w->objectName())
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
           qPrintable(QStringLiteral("%1: minimum size %2 exceeds the %3 screen").arg(name, sizeText(min), sizeText(screen))));
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

  QString demoModel() const { return QString::fromStdString(T::build_dir() + "/demo-model"); }

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(demoModel() + "/config.json"), qPrintable("demo model missing at " + demoModel()));
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
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    QSignalSpy failed(studio.engine(), &ChatBackend::unavailable);
    QTRY_VERIFY_WITH_TIMEOUT(studio.engine()->isReady() || failed.count() > 0, 180000);
    QVERIFY(studio.engine()->isReady());

    // The worst case users met: a CUDA build on a machine whose driver is too old, with a drafter,
    // every tier counted and a failed job with its explanation on the jobs page.
    BackendInfo info = studio.engine()->info();
    info.name = QStringLiteral("CPU");
    info.fallbackReason = QStringLiteral(
        "no usable NVIDIA GPU: no usable CUDA device: CUDA driver version is insufficient for CUDA runtime version");
    info.drafter = QStringLiteral("ngram");
    info.drafterNote = QStringLiteral("n-gram: no DSpark or Qwen3 drafter is installed in %1/addons").arg(info.modelRoot);
    window.statusPanel()->setBackend(info);
    CacheCounters counters;
    counters.requests = 123456;
    counters.hasVram = true;
    counters.vramHits = 61728;
    counters.ramHits = 40000;
    counters.diskReads = 21728;
    counters.netFetches = 1234;
    window.statusPanel()->setCounters(counters);
    InstallRequest req;
    req.modelRoot = data + QStringLiteral("/models/kimi-k3");
    req.hubUrl = QStringLiteral("http://127.0.0.1:1");  // nothing listens on port 1
    InstallJob* job = studio.jobs()->startInstall(QStringLiteral("Full install of Kimi K3"), req);
    QTRY_VERIFY_WITH_TIMEOUT(!job->isActive(), 120000);

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
      QVERIFY2(nameless.isEmpty(), qPrintable(pages[i] + QStringLiteral(": no accessible name: ") + nameless.join(QStringLiteral("; "))));
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
        const QString name = language + (purpose == SetupWizard::Purpose::Setup ? QStringLiteral("-setup")
                                                                                 : QStringLiteral("-addons"));
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
};

QTEST_MAIN(TestGuiLayout)
#include "test_gui_layout.moc"
