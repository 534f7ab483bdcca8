// Settings that reach the engine, changed through the real Settings dialog: the RAM expert
// cache and its budget, the device (and why it is the CPU), the local server on and off; and
// the per-tier shares of expert lookups, which never add up to more than all lookups.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>

#include "chat_view.h"
#include "device_choice.h"
#include "local_engine.h"
#include "main_window.h"
#include "placement/model_byte_map.h"
#include "server_process.h"
#include "settings_dialog.h"
#include "status_panel.h"
#include "studio.h"
#include "studio_settings.h"
#include "support/test_support.h"
#include "tier_shares.h"

using namespace deltafin::gui;
namespace T = deltafin::test;

namespace {

void waitReady(LocalEngine* engine) {
  QSignalSpy failed(engine, &ChatBackend::unavailable);
  QTRY_VERIFY_WITH_TIMEOUT(engine->isReady() || failed.count() > 0, 180000);
  if (!failed.isEmpty()) QFAIL(qPrintable(failed.first().first().toString()));
}

void clickOk(SettingsDialog* dialog) {
  QTest::mouseClick(dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok), Qt::LeftButton);
}

void choose(SettingsDialog* dialog, const char* combo, const QString& value) {
  auto* c = dialog->findChild<QComboBox*>(QString::fromLatin1(combo));
  QVERIFY2(c, combo);
  const int i = c->findData(value);
  QVERIFY2(i >= 0, qPrintable(value));
  c->setCurrentIndex(i);
}

// Slots of the engine's RAM cache, from its own description ("RAM cache N x ..."); -1 if none.
int ramSlots(const QString& expertSource) {
  const QRegularExpressionMatch m = QRegularExpression("^RAM cache (\\d+) x").match(expertSource);
  return m.hasMatch() ? m.captured(1).toInt() : -1;
}

// The percentages a text shows ("12.5 %"), summed.
double percentSum(const QString& text) {
  double sum = 0;
  QRegularExpressionMatchIterator it = QRegularExpression("(\\d+(?:[.,]\\d+)?) %").globalMatch(text);
  while (it.hasNext()) sum += it.next().captured(1).replace(',', '.').toDouble();
  return sum;
}

void sendAndWait(ChatView* chat, const QString& text) {
  chat->input()->setPlainText(text);
  chat->send();
  QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000);
}

}  // namespace

class TestGuiSettings : public QObject {
  Q_OBJECT

  QString demoModel() const { return QString::fromStdString(T::build_dir() + "/demo-model"); }

 private slots:
  void tierSharesNeverExceedAllLookups() {
    // A stream install after Warm: more experts fetched than looked up, every lookup also a disk read.
    CacheCounters warmed;
    warmed.requests = 40;
    warmed.diskReads = 40;
    warmed.netFetches = 96;
    // A RAM tier whose prefetch reads are counted as disk reads as well as later RAM hits.
    CacheCounters prefetched;
    prefetched.requests = 50;
    prefetched.ramHits = 30;
    prefetched.diskReads = 35;
    // A stream install where some lookups had to wait for the network.
    CacheCounters streamed;
    streamed.requests = 64;
    streamed.diskReads = 64;
    streamed.netFetches = 24;
    for (const CacheCounters& c : {warmed, prefetched, streamed}) {
      const TierShares t = tierShares(c);
      QVERIFY(t.vram + t.ram + t.disk + t.network <= c.requests);
      QVERIFY(t.network <= c.netFetches);
      QVERIFY(t.ram <= c.ramHits);
      StatusPanel panel;
      panel.setCounters(c);
      QVERIFY2(percentSum(panel.cacheText()) <= 100.05, qPrintable(panel.cacheText()));
    }
    // Every lookup of the stream install is accounted for: fetched ones on the network, the rest on disk.
    const TierShares s = tierShares(streamed);
    QCOMPARE(s.network, streamed.netFetches);
    QCOMPARE(s.disk, streamed.requests - streamed.netFetches);
    QCOMPARE(tierShares(warmed).network, warmed.requests);
    QCOMPARE(tierShares(warmed).disk, quint64(0));
  }

  void loadNotesShowInTheStatusBar() {
    // The engine's notes while it loads (real K3's spine takes tens of seconds) replace "Loading…"
    // until the model is ready.
    const QString data = QString::fromStdString(T::temp_dir("gui-note"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    emit studio.engine()->loadNote(QStringLiteral("  5.8 of 9.3 GB"));
    QVERIFY2(window.statusPanel()->backendText().contains(QStringLiteral("5.8 of 9.3 GB")),
             qPrintable(window.statusPanel()->backendText()));
    studio.startEngine();
    waitReady(studio.engine());
    QVERIFY2(!window.statusPanel()->backendText().contains(QStringLiteral("Loading")),
             qPrintable(window.statusPanel()->backendText()));
  }

  void ramCacheSettingReachesTheEngine() {
    const QString data = QString::fromStdString(T::temp_dir("gui-ram"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    // By default experts are read in place, through the page cache.
    QCOMPARE(ramSlots(studio.engine()->info().expertSource), -1);

    SettingsDialog* dialog = window.openSettings();
    auto* budget = dialog->findChild<QDoubleSpinBox*>("ramBudget");
    QVERIFY(!budget->isEnabled());  // only with the RAM cache chosen
    auto* reads = dialog->findChild<QComboBox*>("expertReads");
    reads->setCurrentIndex(reads->findData(true));
    QVERIFY(budget->isEnabled());
    // 2 and 4 MiB: both below all of the demo model's routed experts, so the cache is sized by the
    // budget (it never takes more slots than there are experts) and twice the budget is twice the slots.
    const quint64 expertBytes =
        deltafin::placement::ModelByteMap::for_model_root(demoModel().toStdString()).all_expert_bytes();
    QVERIFY2(
        expertBytes > (quint64(4) << 20) + (quint64(4) << 20) / 4,
        qPrintable(QString("the demo's experts (%1 bytes) must exceed the 4 MiB budget with room").arg(expertBytes)));
    budget->setValue(0.002);
    choose(dialog, "cachePolicy", "lru");
    clickOk(dialog);
    QTRY_VERIFY_WITH_TIMEOUT(studio.engine()->isReady() && ramSlots(studio.engine()->info().expertSource) > 0, 120000);
    const QString small = studio.engine()->info().expertSource;
    QVERIFY2(small.contains("lru"), qPrintable(small));
    const int smallSlots = ramSlots(small);

    // Twice the budget, twice the slots: the number reached the engine's cache.
    dialog = window.openSettings();
    dialog->findChild<QDoubleSpinBox*>("ramBudget")->setValue(0.004);
    clickOk(dialog);
    QTRY_VERIFY_WITH_TIMEOUT(studio.engine()->isReady() && ramSlots(studio.engine()->info().expertSource) != smallSlots,
                             120000);
    const int bigSlots = ramSlots(studio.engine()->info().expertSource);
    qInfo("RAM cache: %d slots at 2 MiB, %d at 4 MiB (%s)", smallSlots, bigSlots,
          qPrintable(studio.engine()->info().expertSource));
    QVERIFY2(bigSlots >= 2 * smallSlots - 1 && bigSlots <= 2 * smallSlots + 1,
             qPrintable(QString("%1 then %2 slots").arg(smallSlots).arg(bigSlots)));
    QVERIFY(window.statusPanel()->findChild<QLabel*>("statusBackend")->toolTip().contains("RAM cache"));

    // Replies now go through that cache: the second one finds experts in RAM.
    QSignalSpy counters(studio.engine(), &ChatBackend::countersChanged);
    sendAndWait(window.chatView(), "Hello");
    window.chatView()->newConversation();
    sendAndWait(window.chatView(), "Hello");
    QVERIFY(!counters.isEmpty());
    const auto last = counters.last().first().value<CacheCounters>();
    QVERIFY(last.requests > 0);
    QVERIFY2(last.ramHits > 0, "no expert came from the RAM cache");

    // Saved, and read back as the same engine options.
    const StudioSettings saved = StudioSettings::load(data + "/settings.ini");
    QVERIFY(saved.ramCache);
    QCOMPARE(saved.cachePolicy, QString("lru"));
    QVERIFY(saved.engineOptions() == studio.settings().engineOptions());
    QCOMPARE(saved.engineOptions().ramBudgetBytes, quint64(saved.ramCacheMiB) << 20);
  }

  void deviceSettingIsAppliedAndExplained() {
    Studio studio({demoModel(), QString::fromStdString(T::temp_dir("gui-device"))});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());

    QString whyNot;
    const bool gpu = cudaDeviceUsable(&whyNot);
    SettingsDialog* dialog = window.openSettings();
    auto* device = dialog->findChild<QComboBox*>("deviceCombo");
    const int cudaItem = device->findData("cuda");
    QVERIFY(cudaItem >= 0);
    auto* items = qobject_cast<QStandardItemModel*>(device->model());
    QCOMPARE(items->item(cudaItem)->isEnabled(), gpu);
    if (!gpu) QCOMPARE(items->item(cudaItem)->toolTip(), whyNot);
    choose(dialog, "deviceCombo", "cpu");
    clickOk(dialog);
    QTRY_VERIFY_WITH_TIMEOUT(
        studio.engine()->isReady() && studio.engine()->info().fallbackReason == resolveDevice("cpu").reason, 120000);
    QCOMPARE(studio.engine()->info().name, resolveDevice("cpu").name);
    // The short field says CPU; the reason is in its tooltip and behind the "Why CPU?" link.
    QVERIFY(window.statusPanel()->backendText().startsWith(resolveDevice("cpu").name));
    QVERIFY(window.statusPanel()->backendDetails().contains(resolveDevice("cpu").reason));
    QCOMPARE(window.statusPanel()->whyCpuReason(), resolveDevice("cpu").reason);

    dialog = window.openSettings();
    choose(dialog, "deviceCombo", "auto");
    clickOk(dialog);
    const DeviceChoice automatic = resolveDevice("auto");
    QTRY_VERIFY_WITH_TIMEOUT(studio.engine()->isReady() && studio.engine()->info().fallbackReason == automatic.reason,
                             120000);
    // Auto: the K3 session runs on the GPU when one is usable; otherwise on the CPU, and the status
    // bar says why the GPU is not used.
    QCOMPARE(studio.engine()->info().name, automatic.name);
    if (gpu) {
      QCOMPARE(automatic.name, QString("CUDA"));
    } else {
      QCOMPARE(automatic.name, QString("CPU"));
      QVERIFY(automatic.reason.contains(whyNot));
      QVERIFY(window.statusPanel()->backendDetails().contains(automatic.reason));
      QCOMPARE(window.statusPanel()->whyCpuReason(), automatic.reason);
      // The link opens the settings.
      emit window.statusPanel()->whyCpuLink()->linkActivated("settings");
      auto openDialog = [&]() -> SettingsDialog* {
        for (SettingsDialog* d : window.findChildren<SettingsDialog*>())
          if (d->isVisible()) return d;
        return nullptr;
      };
      QTRY_VERIFY(openDialog() != nullptr);
      openDialog()->reject();
    }
  }

  void serverSwitchesOnAndOff() {
    const T::RunResult help = T::run_process({T::bin_dir() + "/deltafin", "--help"});
    QVERIFY2(help.code == 0 && help.out.find("serve") != std::string::npos, help.err.c_str());
    Studio studio({demoModel(), QString::fromStdString(T::temp_dir("gui-server"))});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    QVERIFY(!studio.server()->isRunning());

    SettingsDialog* dialog = window.openSettings();
    dialog->findChild<QCheckBox*>("serverEnabled")->setChecked(true);
    dialog->findChild<QSpinBox*>("serverPort")->setValue(0);  // any free port
    clickOk(dialog);
    QTRY_VERIFY_WITH_TIMEOUT(!studio.server()->url().isEmpty() || !studio.server()->isRunning(), 120000);
    QVERIFY2(!studio.server()->url().isEmpty(), qPrintable(studio.server()->lastOutput()));
    // The server computes where the chat does.
    const QStringList args = studio.server()->arguments();
    const qsizetype at = args.indexOf("--device");
    QVERIFY2(at >= 0 && at + 1 < args.size(), qPrintable(args.join(' ')));
    QCOMPARE(args[at + 1], resolveDevice(studio.settings().device).name.toLower());
    QCOMPARE(args[at + 1], studio.engine()->info().name.toLower());

    QNetworkAccessManager net;
    QNetworkReply* reply = net.get(QNetworkRequest(QUrl(studio.server()->url() + "/v1/models")));
    QSignalSpy done(reply, &QNetworkReply::finished);
    QVERIFY(done.wait(60000));
    QCOMPARE(reply->error(), QNetworkReply::NoError);
    const QJsonObject models = QJsonDocument::fromJson(reply->readAll()).object();
    QVERIFY2(models.value("data").isArray() && !models.value("data").toArray().isEmpty(), "no models listed");
    reply->deleteLater();

    dialog = window.openSettings();
    dialog->findChild<QCheckBox*>("serverEnabled")->setChecked(false);
    clickOk(dialog);
    QTRY_VERIFY_WITH_TIMEOUT(!studio.server()->isRunning(), 60000);
    QVERIFY(studio.server()->url().isEmpty());
  }

  void gpuServerThatCannotStartServesFromTheCpu() {
    const T::RunResult help = T::run_process({T::bin_dir() + "/deltafin", "--help"});
    QVERIFY2(help.code == 0 && help.out.find("serve") != std::string::npos, help.err.c_str());
    ServerProcess server;
    QStringList messages;
    connect(&server, &ServerProcess::stateChanged, this, [&](bool, const QString& m) { messages << m; });
    server.start(demoModel(), 0, "cuda");
    QTRY_VERIFY_WITH_TIMEOUT(!server.url().isEmpty() || !server.isRunning(), 120000);
    QVERIFY2(!server.url().isEmpty(), qPrintable(server.lastOutput() + "\n" + messages.join('\n')));
    QString why;
    if (cudaDeviceUsable(&why)) {
      QCOMPARE(server.device(), QString("cuda"));
    } else {
      // This machine has no usable GPU: the GPU server stops before listening, and serves from the CPU.
      QCOMPARE(server.device(), QString("cpu"));
      QVERIFY(server.arguments().contains("cpu"));
      bool said = false;
      for (const QString& m : messages) said |= m.contains("could not start on the GPU");
      QVERIFY2(said, qPrintable(messages.join('\n')));
    }
    server.stop();
    QTRY_VERIFY_WITH_TIMEOUT(!server.isRunning(), 60000);
  }
};

QTEST_MAIN(TestGuiSettings)
#include "test_gui_settings.moc"
