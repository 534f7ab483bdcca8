// The Cache page of a stream install says how many shards are verified against the Hub and how
// many bytes on disk are not yet: a shard is checked when its last byte arrives, so a fresh
// install has only its spine-only shards verified, and warming every layer verifies them all.
#include "runtime/k3_model.h"

#include <QLabel>
#include <QSignalSpy>

#include "cache_view.h"
#include "formatting.h"
#include "install/setup.h"
#include "install/test_hub.h"
#include "local_engine.h"
#include "main_window.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "stream/stream_layout.h"
#include "studio.h"
#include "support/test_support.h"

using namespace deltafin::gui;
namespace D = deltafin;
namespace T = deltafin::test;

namespace {

struct Quiet : D::InstallObserver {};

void waitReady(LocalEngine* engine) {
  QSignalSpy failed(engine, &ChatBackend::unavailable);
  QTRY_VERIFY_WITH_TIMEOUT(engine->isReady() || failed.count() > 0, 180000);
  if (!failed.isEmpty()) QFAIL(qPrintable(failed.first().first().toString()));
}

}  // namespace

class TestGuiCacheIntegrity : public QObject {
  Q_OBJECT

 private slots:
  void theCachePageShowsVerifiedAndUnverifiedShards() {
    const std::string k3 = T::fixtures_dir() + "/k3-tiny";
    const D::K3Config cfg = D::K3Config::load(k3 + "/config.json");
    T::TestHub hub;
    hub.add_repo("moonshotai/Kimi-K3", "main", k3);
    const std::string root = T::temp_dir("gui-integrity") + "/stream";
    {
      D::SetupOptions s;
      s.mode = D::SetupOptions::Mode::Stream;
      s.model_root = root;
      s.hub.base_url = hub.url();
      s.revision = "main";
      s.with_dspark = false;
      s.cache_cap = 1ull << 30;  // every expert fits: warming all layers completes every shard
      s.space_margin = 0;
      s.tuning.backoff_initial_s = 0.01;
      Quiet q;
      D::run_setup(s, q, nullptr);
    }
    // What the page must say, from the checkpoint alone: a shard holding experts is unverified
    // and holds only its spine until experts arrive; a spine-only shard was checked at setup.
    auto ck = D::Checkpoint::open(root);
    const int shards = static_cast<int>(ck->shard_names().size());
    int with_experts = 0;
    quint64 spine_bytes = 0;
    for (uint32_t s = 0; s < ck->shard_names().size(); ++s) {
      const D::ShardSpine sp = D::shard_spine(ck->shard_header(s));
      if (!sp.has_experts) continue;
      ++with_experts;
      spine_bytes += sp.bytes;
    }
    QVERIFY(with_experts > 0);
    const auto loc = D::expert_locations(*ck, cfg.layers, cfg.experts);

    const QString data = QString::fromStdString(T::temp_dir("gui-integrity-data"));
    Studio studio({QString::fromStdString(root), data});
    studio.settings().drafter = QStringLiteral("off");
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    CacheView* cache = window.cacheView();
    QSignalSpy updated(cache, &CacheView::snapshotUpdated);
    cache->refresh();
    QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0 && cache->snapshot().stream, 30000);
    {
      const CacheSnapshot& s = cache->snapshot();
      QCOMPARE(s.shards, shards);
      QCOMPARE(s.verifiedShards, shards - with_experts);
      QCOMPARE(s.unverifiedBytes, spine_bytes);
      const QString want = QStringLiteral("Verified against the Hub: %1 of %2 shards; unverified: %3 on disk")
                               .arg(shards - with_experts)
                               .arg(shards)
                               .arg(formatBytes(spine_bytes));
      QVERIFY2(cache->summary()->text().contains(want), qPrintable(cache->summary()->text()));
      qInfo("after setup: %s", qPrintable(want));
    }

    // Every expert of every layer: each shard completes, is checked, and the page says so.
    for (int l = 0; l < cfg.layers; ++l) {
      if (loc[static_cast<size_t>(l)].empty()) continue;  // a dense layer has no experts to warm
      updated.clear();
      studio.engine()->warmCacheLayer(l);
      QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0, 60000);
    }
    const CacheSnapshot& s = cache->snapshot();
    QCOMPARE(s.verifiedShards, shards);
    QCOMPARE(s.unverifiedBytes, quint64(0));
    const QString want = QStringLiteral("Verified against the Hub: %1 of %1 shards; unverified: %2 on disk")
                             .arg(shards)
                             .arg(formatBytes(0));
    QVERIFY2(cache->summary()->text().contains(want), qPrintable(cache->summary()->text()));
    qInfo("after warming every layer: %s", qPrintable(want));
  }
};

QTEST_MAIN(TestGuiCacheIntegrity)
#include "test_gui_cache_integrity.moc"
