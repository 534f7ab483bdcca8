// The tier map on the Cache page for every install kind: a full install with the RAM expert cache
// shows, during a reply, experts in RAM with their use counts; a plain full install shows every
// expert on disk; the map's colours come from the tier and follow the palette.
#include <QApplication>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalSpy>

#include "cache_view.h"
#include "chat_view.h"
#include "expert_heat_map.h"
#include "local_engine.h"
#include "main_window.h"
#include "studio.h"
#include "support/test_support.h"

using namespace deltafin::gui;
namespace T = deltafin::test;

namespace {

void waitReady(LocalEngine* engine) {
  QSignalSpy failed(engine, &ChatBackend::unavailable);
  QTRY_VERIFY_WITH_TIMEOUT(engine->isReady() || failed.count() > 0, 180000);
  if (!failed.isEmpty()) QFAIL(qPrintable(failed.first().first().toString()));
}

}  // namespace

class TestGuiTiers : public QObject {
  Q_OBJECT

  QString demoModel() const { return QString::fromStdString(T::build_dir() + "/demo-model"); }

 private slots:
  void ramTierExpertsShowDuringARun() {
    // The demo model is a full install (every expert in local shards); --ram-cache in Settings.
    const QString data = QString::fromStdString(T::temp_dir("gui-tiers-ram"));
    Studio studio({demoModel(), data});
    studio.settings().ramCache = true;
    studio.settings().ramCacheMiB = 64;  // the demo model's experts fit many times; never sized from free memory
    studio.settings().maxNewTokens = 100000;
    MainWindow window(&studio);
    window.chatView()->setMaxNewTokens(100000);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    QVERIFY2(studio.engine()->info().expertSource.startsWith("RAM cache"), qPrintable(studio.engine()->info().expertSource));

    CacheView* cache = window.cacheView();
    window.showPage(MainWindow::Page::Cache);
    QSignalSpy updated(cache, &CacheView::snapshotUpdated);
    cache->refresh();
    QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0, 30000);
    const CacheSnapshot& before = cache->snapshot();
    QVERIFY(before.ramTier);
    QVERIFY(!before.stream);
    QCOMPARE(before.tiers.size(), before.layers * before.experts);

    // A long reply, started from the chat while the Cache page is shown: the map follows it live.
    ChatView* chat = window.chatView();
    chat->input()->setPlainText("Tell me a very long story about the sea.");
    chat->send();
    QVERIFY(chat->isGenerating());
    // Each snapshot as it arrives: the reply is still running when one sent between its tokens
    // is shown (its end is reported after it).
    CacheSnapshot during;
    int duringRun = 0;
    QMetaObject::Connection watch = connect(cache, &CacheView::snapshotUpdated, this, [&] {
      if (!chat->isGenerating()) return;
      ++duringRun;
      if (cache->snapshot().count(ExpertTier::Ram) > during.count(ExpertTier::Ram)) during = cache->snapshot();
    });
    QTRY_VERIFY_WITH_TIMEOUT(during.count(ExpertTier::Ram) > 0 || !chat->isGenerating(), 120000);
    chat->stopGenerating();
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 120000);
    disconnect(watch);
    qInfo("%d tier map updates during the reply; %d of %d experts in RAM", duringRun, during.count(ExpertTier::Ram),
          during.layers * during.experts);
    QVERIFY2(during.count(ExpertTier::Ram) > 0, "no snapshot with RAM-tier experts arrived while the reply ran");

    // What the map shows is that snapshot: RAM cells in the RAM colour, used ones counted.
    ExpertHeatMap* map = cache->heatMap();
    QCOMPARE(map->snapshot().count(ExpertTier::Ram) > 0, true);
    int ramCells = 0, usedRamCells = 0;
    for (int l = 0; l < during.layers; ++l)
      for (int e = 0; e < during.experts; ++e) {
        if (during.tier(l, e) != ExpertTier::Ram) continue;
        ++ramCells;
        usedRamCells += during.uses.value(l * during.experts + e) > 0;
      }
    QCOMPARE(ramCells, during.count(ExpertTier::Ram));
    QCOMPARE(during.cachedExperts, ramCells);
    QVERIFY(usedRamCells > 0);
    QCOMPARE(during.count(ExpertTier::Ram) + during.count(ExpertTier::Disk), during.layers * during.experts);
    QVERIFY(cache->legend()->text().contains("RAM"));
    QVERIFY(cache->summary()->text().contains("RAM expert cache"));
    // Per layer, as the tooltip says it.
    int layerWithRam = -1;
    for (int l = 0; l < during.layers && layerWithRam < 0; ++l)
      if (during.count(l, ExpertTier::Ram) > 0) layerWithRam = l;
    QVERIFY(layerWithRam >= 0);
    QVERIFY(map->describeLayer(layerWithRam).contains(QString("RAM %1").arg(map->snapshot().count(layerWithRam, ExpertTier::Ram))));
    const QImage shot = map->grab().toImage();
    QVERIFY(!shot.isNull());
  }

  void plainFullInstallShowsEveryExpertOnDisk() {
    const QString data = QString::fromStdString(T::temp_dir("gui-tiers-disk"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    window.showPage(MainWindow::Page::Cache);
    studio.startEngine();
    waitReady(studio.engine());
    CacheView* cache = window.cacheView();
    QSignalSpy updated(cache, &CacheView::snapshotUpdated);
    cache->refresh();
    QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0, 30000);
    const CacheSnapshot& s = cache->snapshot();
    QVERIFY(s.layers > 0 && s.experts > 0);
    QCOMPARE(s.count(ExpertTier::Disk), s.layers * s.experts);
    QVERIFY(!s.ramTier && !s.stream);
    QVERIFY(cache->summary()->text().contains("page cache"));
  }

  void mapColoursFollowThePalette() {
    CacheSnapshot s;
    s.layers = 2;
    s.experts = 2;
    s.ramTier = true;
    s.tiers = {ExpertTier::Ram, ExpertTier::Disk, ExpertTier::Ram, ExpertTier::Disk};
    s.uses = {10, 0, 1, 0};
    ExpertHeatMap map;
    map.setSnapshot(s);
    // The most used RAM expert has the RAM colour; an unused one is fainter.
    QCOMPARE(map.cellColor(0, 0).name(), map.tierColor(ExpertTier::Ram).name());
    QVERIFY(map.cellColor(1, 0) != map.cellColor(0, 0));
    QVERIFY(map.cellColor(0, 1) != map.cellColor(0, 0));
    // Unused cells blend with the palette's base: a dark palette gives dark cells.
    QPalette light = map.palette(), dark = map.palette();
    light.setColor(QPalette::Base, Qt::white);
    dark.setColor(QPalette::Base, QColor(0x20, 0x20, 0x20));
    map.setPalette(light);
    const int lightValue = map.cellColor(0, 1).value();
    map.setPalette(dark);
    QVERIFY(map.cellColor(0, 1).value() < lightValue);
  }
};

QTEST_MAIN(TestGuiTiers)
#include "test_gui_tiers.moc"
