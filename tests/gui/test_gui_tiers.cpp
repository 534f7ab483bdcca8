// The tier map on the Cache page for every install kind: a full install with the RAM expert cache
// shows, during a reply, experts in RAM with their use counts; a plain full install shows every
// expert on disk; a GPU session's partial VRAM tier is drawn per expert; the map's colours come
// from the tier and follow the palette; the placement plan is drawn as a VRAM / RAM / disk bar.
#include <QApplication>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalSpy>

#include "cache_inspector.h"
#include "cache_view.h"
#include "chat_view.h"
#include "expert_heat_map.h"
#include "local_engine.h"
#include "bench_view.h"
#include "formatting.h"
#include "main_window.h"
#include "message_widget.h"
#include "placement/planner.h"
#include "placement_bar.h"
#include "settings_dialog.h"
#include "runtime/decode_session.h"
#include "runtime/k3_model.h"
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
    // The random-weight demo, a full install (every expert in local shards); --ram-cache in Settings.
    // Random weights because the reply must still be running when the map is refreshed: the trained
    // demo's replies end by themselves after a sentence or two.
    const QString data = QString::fromStdString(T::temp_dir("gui-tiers-ram"));
    Studio studio({QString::fromStdString(T::build_dir() + "/demo-random"), data});
    studio.settings().ramCache = true;
    studio.settings().ramCacheMiB = 64;  // the demo model's experts fit many times; never sized from free memory
    studio.settings().maxNewTokens = 100000;
    MainWindow window(&studio);
    window.chatView()->setMaxNewTokens(100000);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    QVERIFY2(studio.engine()->info().expertSource.startsWith("RAM cache"),
             qPrintable(studio.engine()->info().expertSource));

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
    QVERIFY(map->describeLayer(layerWithRam)
                .contains(QString("RAM %1").arg(map->snapshot().count(layerWithRam, ExpertTier::Ram))));
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

  // A GPU session whose VRAM tier holds some experts: those are drawn in VRAM, over the tier the
  // host source has them in; the rest stay where they are; the legend counts them.
  void partialVramTierIsDrawnPerExpert() {
    const auto model = deltafin::K3Model::load(demoModel().toStdString());
    const int layers = model->config().layers, experts = model->config().experts;
    QVERIFY(layers >= 2 && experts >= 4);
    deltafin::VramTierStats vram;
    vram.slot_count = 8;
    vram.resident = {{0, 1}, {1, 3}, {1, 0}, {layers - 1, experts - 1}};
    const CacheSnapshot s = snapshotCache(model->experts(), layers, experts, &vram);
    QVERIFY(s.vramTier);
    QVERIFY(!s.allInVram);
    QCOMPARE(s.vramSlots, 8);
    QCOMPARE(s.count(ExpertTier::Vram), 4);
    QCOMPARE(s.count(ExpertTier::Disk), layers * experts - 4);
    QCOMPARE(s.tier(1, 3), ExpertTier::Vram);
    QCOMPARE(s.tier(1, 1), ExpertTier::Disk);
    QCOMPARE(s.count(1, ExpertTier::Vram), 2);
    // Every expert resident: all in VRAM, whatever the list says.
    vram.all_resident = true;
    QCOMPARE(snapshotCache(model->experts(), layers, experts, &vram).count(ExpertTier::Vram), layers * experts);
    // No VRAM tier (the CPU session): none in VRAM.
    QCOMPARE(snapshotCache(model->experts(), layers, experts).count(ExpertTier::Vram), 0);

    ExpertHeatMap map;
    QPalette p = map.palette();
    p.setColor(QPalette::Base, Qt::white);
    map.setPalette(p);
    map.setSnapshot(s);
    QCOMPARE(map.cellColor(1, 3).hue(), map.tierColor(ExpertTier::Vram).hue());
    QCOMPARE(map.cellColor(1, 1).hue(), map.tierColor(ExpertTier::Disk).hue());
    QVERIFY(map.describeLayer(1).contains(QString("%1 2").arg(tierName(ExpertTier::Vram))));
    QVERIFY(map.accessibleDescription().contains("4 in VRAM"));

    // On the Cache page: the legend names the VRAM tier with its count.
    const QString data = QString::fromStdString(T::temp_dir("gui-tiers-vram"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    CacheView* cache = window.cacheView();
    emit studio.engine()->cacheSnapshot(s);
    QVERIFY2(cache->legend()->text().contains(QString("%1&nbsp;4").arg(tierName(ExpertTier::Vram))),
             qPrintable(cache->legend()->text()));
    QCOMPARE(cache->heatMap()->snapshot().count(ExpertTier::Vram), 4);
  }

  // The placement plan as a VRAM / RAM / disk bar: its bytes are the plan's, above the tier map,
  // on the benchmark page and in Settings, predicted decode speed beside the measured one.
  void placementPlanIsDrawn() {
    using namespace deltafin::placement;
    const ModelByteMap bytes = ModelByteMap::for_model_root(demoModel().toStdString());
    MachineBudget roomy;
    roomy.ram_budget = 64ull << 30;
    const Plan all = make_plan(bytes, roomy, assumed_desktop());
    const PlacementShares a = placementShares(all);
    QCOMPARE(a.vram, quint64(0));  // no GPU in the budget
    QCOMPARE(a.ram + a.disk, all.spine_in(Home::Ram) + all.spine_in(Home::Disk) + bytes.all_expert_bytes());
    QCOMPARE(a.disk, all.spine_in(Home::Disk) + bytes.all_expert_bytes() -
                         std::min<quint64>(all.experts.ram_bytes, bytes.all_expert_bytes()));
    QVERIFY(std::abs(a.predictedTokensPerSecond - 1.0 / all.decode.seconds_per_token) < 1e-9);
    // The smallest budget: more is read from disk.
    MachineBudget tight;
    tight.ram_budget = all.ram_minimum;
    const PlacementShares t = placementShares(make_plan(bytes, tight, assumed_desktop()));
    QVERIFY2(t.disk > a.disk, qPrintable(QString("%1 vs %2").arg(t.disk).arg(a.disk)));
    // A GPU budget: bytes in VRAM.
    MachineBudget gpu = roomy;
    gpu.gpus.push_back(GpuBudget{"GPU 0", 8ull << 30, 0});
    Bandwidths rates = assumed_desktop();
    QVERIFY(placementShares(make_plan(bytes, gpu, rates)).vram > 0);

    PlacementBar bar;
    bar.setPlan(all);
    QVERIFY(bar.caption().contains(formatBytes(a.ram)));
    QVERIFY(bar.caption().contains(QLocale().toString(a.predictedTokensPerSecond, 'f', 2)));
    bar.setMeasured(3.25);
    QVERIFY(bar.caption().contains(QLocale().toString(3.25, 'f', 2)));
    QVERIFY(bar.toolTip().contains(bar.caption()));  // elided in narrow windows, whole here

    // In the Studio: filled from the planner once the model is loaded, measured after a reply.
    const QString data = QString::fromStdString(T::temp_dir("gui-tiers-plan"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    auto* cacheBar = qobject_cast<PlacementBar*>(window.cacheView()->placementBar());
    QVERIFY(cacheBar);
    QTRY_VERIFY_WITH_TIMEOUT(cacheBar->hasPlan(), 10000);
    QVERIFY2(cacheBar->shares().ram + cacheBar->shares().disk >= bytes.all_expert_bytes(),
             qPrintable(cacheBar->caption()));
    QVERIFY(cacheBar->measured() == 0);
    auto* benchBar = window.benchView()->placementBar();
    QTRY_VERIFY_WITH_TIMEOUT(benchBar->hasPlan(), 10000);
    ChatView* chat = window.chatView();
    chat->setMaxNewTokens(8);
    chat->input()->setPlainText("Hello");
    chat->send();
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 120000);
    const double measured = chat->messageWidgets().last()->message().stats.decodeTokensPerSecond;
    QVERIFY(measured > 0);
    QCOMPARE(cacheBar->measured(), measured);
    QVERIFY(cacheBar->caption().contains(QLocale().toString(measured, 'f', 2)));
    SettingsDialog* dialog = window.openSettings();
    QVERIFY(dialog->placementBar()->hasPlan());
    QCOMPARE(dialog->placementBar()->measured(), measured);
    dialog->reject();
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
