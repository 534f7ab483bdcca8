// Drives deltafin-studio's real widgets against the real engine: the bundled demo model for
// chat and benchmarks, a local hub for installs, a stream-mode fixture for the cache browser.
#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProcess>
#include <QRegularExpression>
#include <QPushButton>
#include <QImage>
#include <QSignalSpy>
#include <QTreeWidget>
#include <QTranslator>

#include "install/pinned_repos.h"
#include "support/test_support.h"
#include "install/test_hub.h"

#include <QCheckBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QRadioButton>

#include "bench_view.h"
#include "cache_view.h"
#include "chat_view.h"
#include "conversation_store.h"
#include "expert_heat_map.h"
#include "install_job.h"
#include "job_manager.h"
#include "jobs_view.h"
#include "setup_wizard.h"
#include "language.h"
#include "local_engine.h"
#include "main_window.h"
#include "message_widget.h"
#include "remote_chat_backend.h"
#include "status_panel.h"
#include "studio.h"

using namespace deltafin::gui;
namespace T = deltafin::test;

namespace {

// Serves the demo model as K3 and the DSpark fixture as DSpark, at their pinned revisions, so the
// wizard's default request installs from it exactly as it would from the Hub.
void serveInstallRepos(T::TestHub& hub, const std::string& k3Dir) {
  for (const deltafin::PinnedRepo& p : deltafin::pinned_repos()) {
    if (p.role == deltafin::RepoRole::K3) hub.add_repo(p.repo, p.revision, k3Dir);
    if (p.role == deltafin::RepoRole::DSpark) hub.add_repo(p.repo, p.revision, T::fixtures_dir() + "/dspark-tiny");
    if (p.role == deltafin::RepoRole::Qwen) hub.add_repo(p.repo, p.revision, T::fixtures_dir() + "/qwen3-tiny");
  }
}

QByteArray slurp(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestGui : public QObject {
  Q_OBJECT

 private:
  QString demoModel() const { return QString::fromStdString(T::build_dir() + "/demo-model"); }

  // Waits until the engine has the model or says why not.
  static void waitReady(LocalEngine* engine) {
    QSignalSpy failed(engine, &ChatBackend::unavailable);
    QTRY_VERIFY_WITH_TIMEOUT(engine->isReady() || failed.count() > 0, 180000);
    if (!failed.isEmpty()) QFAIL(qPrintable(failed.first().first().toString()));
  }

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(demoModel() + "/config.json"), qPrintable("demo model missing at " + demoModel()));
  }

  void chatStreamsTextFromTheDemoModel() {
    const QString data = QString::fromStdString(T::temp_dir("gui-chat"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    QVERIFY(window.statusPanel()->backendText().contains("CPU"));

    ChatView* chat = window.chatView();
    QSignalSpy chunks(studio.engine(), &ChatBackend::chunk);
    QSignalSpy finished(studio.engine(), &ChatBackend::finished);
    QTest::keyClicks(chat->input(), "Hello, who are you?");
    QVERIFY(chat->sendButton()->isEnabled());
    QTest::mouseClick(chat->sendButton(), Qt::LeftButton);
    QVERIFY(chat->isGenerating());
    QVERIFY(chat->stopButton()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000);
    QCOMPARE(finished.count(), 1);
    QVERIFY2(chunks.count() >= 1, "no text was streamed");

    QString streamed;
    for (const QList<QVariant>& c : chunks) streamed += c.at(1).toString() + c.at(2).toString();
    QVERIFY(!streamed.isEmpty());
    const QList<MessageWidget*> messages = chat->messageWidgets();
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[0]->message().content, QString("Hello, who are you?"));
    const StoredMessage& reply = messages[1]->message();
    QCOMPARE(reply.reasoning + reply.content, streamed);
    QVERIFY(reply.hasStats);
    QVERIFY(reply.stats.newTokens > 0);
    auto* stats = messages[1]->findChild<QLabel*>("messageStats");
    QVERIFY(stats && stats->isVisible() && stats->text().contains("tok/s"));
    QVERIFY(!window.statusPanel()->speedText().isEmpty());

    // The conversation is on disk with the reply and its figures.
    ConversationStore reread(data + "/conversations.json");
    QCOMPARE(reread.conversations().size(), 1);
    const Conversation& saved = reread.conversations().first();
    QCOMPARE(saved.messages.size(), 2);
    QCOMPARE(saved.messages[1].content, reply.content);
    QVERIFY(saved.messages[1].hasStats);
    QCOMPARE(saved.messages[1].stats.newTokens, reply.stats.newTokens);
  }

  void stopEndsAReplyEarly() {
    Studio studio({demoModel(), QString::fromStdString(T::temp_dir("gui-stop"))});
    studio.settings().maxNewTokens = 100000;
    MainWindow window(&studio);
    window.chatView()->setMaxNewTokens(100000);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    ChatView* chat = window.chatView();
    QSignalSpy finished(studio.engine(), &ChatBackend::finished);
    chat->input()->setPlainText("Count to a million.");
    chat->send();
    QVERIFY(chat->isGenerating());
    QTest::mouseClick(chat->stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 120000);
    QCOMPARE(finished.count(), 1);
    const auto stats = finished.first().at(1).value<GenerationStats>();
    QVERIFY(stats.stoppedByUser);
    QVERIFY(stats.newTokens < 100000);
  }

  void wizardInstallsFromTheLocalHubToCompletion() {
    T::TestHub hub;
    serveInstallRepos(hub, demoModel().toStdString());
    const QString data = QString::fromStdString(T::temp_dir("gui-wizard"));
    const QString root = data + "/models/kimi-k3";
    Studio studio({QString(), data});
    studio.settings().modelFolder = root;
    QVERIFY(studio.needsFirstRun());

    SetupWizard wizard(&studio);
    wizard.show();
    QCOMPARE(wizard.currentId(), int(SetupWizard::WelcomePage));
    wizard.next();
    QCOMPARE(wizard.currentId(), int(SetupWizard::ModePage));
    QCOMPARE(wizard.findChild<QLineEdit*>("modelFolder")->text(), root);
    wizard.findChild<QLineEdit*>("hubUrl")->setText(QString::fromStdString(hub.url()));
    QTest::mouseClick(wizard.findChild<QRadioButton*>("fullInstall"), Qt::LeftButton);
    wizard.next();
    QCOMPARE(wizard.currentId(), int(SetupWizard::AddonsPage));
    QVERIFY(wizard.findChild<QCheckBox*>("withDspark")->isChecked());
    wizard.next();
    QCOMPARE(wizard.currentId(), int(SetupWizard::PlanPage));
    QTRY_VERIFY_WITH_TIMEOUT(wizard.planReady() || !wizard.planError().isEmpty(), 60000);
    QVERIFY2(wizard.planReady(), qPrintable(wizard.planError()));
    // K3 and DSpark, sized from the hub's listing, compared with the free space.
    QCOMPARE(wizard.plan().repos.size(), 2);
    QVERIFY(wizard.plan().missingBytes > 0);
    QVERIFY(wizard.plan().freeBytes > wizard.plan().missingBytes);
    QCOMPARE(wizard.findChild<QTreeWidget*>("planTable")->topLevelItemCount(), 2);
    QVERIFY(wizard.button(QWizard::FinishButton)->isEnabled());
    QTest::mouseClick(wizard.button(QWizard::FinishButton), Qt::LeftButton);

    QCOMPARE(studio.jobs()->jobs().size(), 1);
    InstallJob* job = studio.jobs()->jobs().first();
    QCOMPARE(job->id(), wizard.startedJobId());
    QTRY_VERIFY_WITH_TIMEOUT(!job->isActive(), 120000);
    QVERIFY2(job->state() == InstallJob::State::Done, qPrintable(job->errorWhat() + " " + job->errorTodo()));
    QCOMPARE(job->progress().bytesDone, job->progress().bytesTotal);
    for (const QString& name : QDir(demoModel()).entryList(QDir::Files))
      QVERIFY2(slurp(root + "/" + name) == slurp(demoModel() + "/" + name), qPrintable(name));
    QVERIFY(QFileInfo::exists(root + "/addons/kimi-k3-dspark/config.json"));
    // The finished install is what the engine now loads.
    QVERIFY(!studio.needsFirstRun());
    waitReady(studio.engine());
    QCOMPARE(studio.engine()->info().modelRoot, root);
  }

  void jobsPauseResumeAndSurviveARestart() {
    T::TestHub hub;
    serveInstallRepos(hub, demoModel().toStdString());
    hub.set_bytes_per_second(1 << 20);  // slow enough to be caught mid-transfer
    const QString data = QString::fromStdString(T::temp_dir("gui-jobs"));
    const QString root = data + "/models/kimi-k3";
    InstallRequest req;
    req.modelRoot = root;
    req.hubUrl = QString::fromStdString(hub.url());
    req.withDspark = false;
    QString id;
    {
      JobManager jobs(data + "/jobs.json");
      JobsView view(&jobs);
      view.show();
      InstallJob* job = jobs.startInstall("test install", req);
      id = job->id();
      QCOMPARE(view.selectedId(), id);
      QTRY_VERIFY_WITH_TIMEOUT(job->progress().bytesDone > 0, 60000);
      QVERIFY(view.pauseButton()->isEnabled());
      QTest::mouseClick(view.pauseButton(), Qt::LeftButton);
      QTRY_COMPARE_WITH_TIMEOUT(job->state(), InstallJob::State::Paused, 60000);
      const quint64 pausedAt = job->progress().bytesDone;
      QVERIFY(pausedAt < job->progress().bytesTotal);
      QVERIFY(view.resumeButton()->isEnabled());
      QVERIFY(!view.pauseButton()->isEnabled());
      QTest::mouseClick(view.resumeButton(), Qt::LeftButton);
      QCOMPARE(job->state(), InstallJob::State::Running);
      QTRY_VERIFY_WITH_TIMEOUT(job->progress().bytesDone > pausedAt, 60000);
      // The app quits while the job runs.
    }
    {
      JobManager jobs(data + "/jobs.json");
      QCOMPARE(jobs.jobs().size(), 1);
      InstallJob* job = jobs.find(id);
      QVERIFY(job);
      QCOMPARE(job->state(), InstallJob::State::Paused);
      QVERIFY(job->log().join('\n').contains("Paused"));
      hub.set_bytes_per_second(0);
      jobs.resumeInterrupted();
      QCOMPARE(job->state(), InstallJob::State::Running);
      QTRY_VERIFY_WITH_TIMEOUT(!job->isActive(), 120000);
      QVERIFY2(job->state() == InstallJob::State::Done, qPrintable(job->errorWhat() + " " + job->errorTodo()));
    }
    for (const QString& name : QDir(demoModel()).entryList(QDir::Files))
      QVERIFY2(slurp(root + "/" + name) == slurp(demoModel() + "/" + name), qPrintable(name));
  }

  void failedJobShowsWhatFailedAndWhatToDo() {
    const QString data = QString::fromStdString(T::temp_dir("gui-fail"));
    JobManager jobs(data + "/jobs.json");
    JobsView view(&jobs);
    view.show();
    InstallRequest req;
    req.modelRoot = data + "/models";
    req.hubUrl = "http://127.0.0.1:1";  // nothing listens on port 1
    InstallJob* job = jobs.startInstall("unreachable hub", req);
    QTRY_VERIFY_WITH_TIMEOUT(!job->isActive(), 120000);
    QCOMPARE(job->state(), InstallJob::State::Failed);
    QVERIFY(!job->errorWhat().isEmpty());
    auto* error = view.findChild<QLabel*>("jobError");
    QVERIFY(error && error->isVisible());
    QVERIFY(error->text().contains(job->errorWhat().toHtmlEscaped()));
    QVERIFY(view.resumeButton()->isEnabled());
  }

  void cacheBrowserShowsAStreamInstall() {
    T::TestHub hub;
    serveInstallRepos(hub, demoModel().toStdString());
    const QString data = QString::fromStdString(T::temp_dir("gui-cache"));
    const QString root = data + "/stream";
    InstallRequest req;
    req.stream = true;
    req.withDspark = false;
    req.modelRoot = root;
    req.hubUrl = QString::fromStdString(hub.url());
    runInstall(req, {}, nullptr);
    const int before = hub.requests_matching("/resolve/");

    Studio studio({root, data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    CacheView* cache = window.cacheView();
    QSignalSpy updated(cache, &CacheView::snapshotUpdated);
    cache->refresh();
    QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0 && cache->snapshot().stream, 30000);
    QCOMPARE(cache->snapshot().cachedExperts, 0);
    QVERIFY(cache->summary()->text().contains("Streaming install"));

    // A reply routes through experts, which are fetched from the hub into the cache.
    ChatView* chat = window.chatView();
    chat->setMaxNewTokens(4);
    chat->input()->setPlainText("Hi");
    chat->send();
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 120000);
    QVERIFY(hub.requests_matching("/resolve/") > before);
    updated.clear();
    cache->refresh();
    QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0, 30000);
    const CacheSnapshot& s = cache->snapshot();
    QVERIFY(s.cachedExperts > 0);
    QVERIFY(s.cachedBytes > 0);
    int cells = 0;
    for (int l = 0; l < s.layers; ++l)
      for (int e = 0; e < s.experts; ++e) cells += s.cached(l, e);
    QCOMPARE(cells, s.cachedExperts);
    QTreeWidget* tiers = cache->tierTable();
    QCOMPARE(tiers->topLevelItemCount(), 4);
    QVERIFY(tiers->topLevelItem(3)->text(1).toULongLong() > 0);  // network fetches
    QTRY_VERIFY_WITH_TIMEOUT(cache->diskTable()->topLevelItemCount() >= 3, 30000);

    // Warm a whole layer, then evict everything.
    const int layer = 1;  // layer 0 is dense in every K3 layout
    cache->heatMap()->setSelectedLayer(layer);
    updated.clear();
    studio.engine()->warmCacheLayer(layer);
    QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0, 60000);
    for (int e = 0; e < cache->snapshot().experts; ++e) QVERIFY(cache->snapshot().cached(layer, e));
    // Warm fetched experts that no lookup asked for: each tier's share still counts lookups only.
    double shares = 0;
    for (int i = 0; i < tiers->topLevelItemCount(); ++i)
      shares += tiers->topLevelItem(i)->text(2).section(' ', 0, 0).replace(',', '.').toDouble();
    QVERIFY2(shares > 0 && shares <= 100.05, qPrintable(QString::number(shares)));
    QRegularExpressionMatchIterator it =
        QRegularExpression("(\\d+(?:[.,]\\d+)?) %").globalMatch(window.statusPanel()->cacheText());
    double status = 0;
    while (it.hasNext()) status += it.next().captured(1).replace(',', '.').toDouble();
    QVERIFY2(status > 0 && status <= 100.05, qPrintable(window.statusPanel()->cacheText()));
    updated.clear();
    studio.engine()->evictCache(0);
    QTRY_VERIFY_WITH_TIMEOUT(updated.count() > 0, 60000);
    QCOMPARE(cache->snapshot().cachedExperts, 0);
    QCOMPARE(cache->snapshot().cachedBytes, quint64(0));
  }

  void benchmarkRunsChartsAndExports() {
    const QString data = QString::fromStdString(T::temp_dir("gui-bench"));
    Studio studio({demoModel(), data});
    studio.startEngine();
    waitReady(studio.engine());
    const QString history = data + "/bench-history.json";
    {
      BenchView bench(studio.engine(), history);
      bench.show();
      QVERIFY(bench.runButton()->isEnabled());
      QSignalSpy done(&bench, &BenchView::runFinished);
      bench.runArms({{"short", 16, 4, 1}});
      QVERIFY(bench.isRunning());
      QVERIFY(done.wait(180000));
      QCOMPARE(bench.history().size(), 1);
      const BenchResult& r = bench.history().first();
      QCOMPARE(r.arm, QString("short"));
      QVERIFY(r.prefillTokensPerSecond > 0);
      QVERIFY(r.decodeTokensPerSecond > 0);
      QCOMPARE(r.promptTokens, 16);
      QVERIFY(r.diskReadRate + r.ramHitRate + r.netFetchRate > 0);
      QCOMPARE(bench.findChild<QTreeWidget*>("benchHistory")->topLevelItemCount(), 1);
      const QString out = data + "/export.json";
      QString error;
      QVERIFY2(bench.exportJson(out, &error), qPrintable(error));
      const QJsonArray results = QJsonDocument::fromJson(slurp(out)).object().value("results").toArray();
      QCOMPARE(results.size(), 1);
      QCOMPARE(results.first().toObject().value("decode_tokens_per_second").toDouble(), r.decodeTokensPerSecond);
    }
    BenchView reopened(studio.engine(), history);
    QCOMPARE(reopened.history().size(), 1);
  }

  void translationsAreCompleteAndSwitchable() {
    for (const QString& lang : {QString("de"), QString("zh_CN")}) {
      const QString ts = QString::fromStdString(T::source_dir()) + "/translations/deltafin_" + lang + ".ts";
      const QByteArray xml = slurp(ts);
      QVERIFY2(!xml.isEmpty(), qPrintable(ts));
      QVERIFY2(xml.count("<message>") > 150, qPrintable(ts));
      QVERIFY2(!xml.contains("type=\"unfinished\""), qPrintable(ts + " has untranslated strings"));
    }
    Studio studio({demoModel(), QString::fromStdString(T::temp_dir("gui-lang"))});
    Language language;
    QCOMPARE(language.apply("de"), QString("de"));
    {
      MainWindow window(&studio);
      QCOMPARE(window.menuBar()->actions().first()->text(), QString("&Datei"));
      QCOMPARE(window.chatView()->sendButton()->text(), QString("&Senden"));
    }
    QCOMPARE(language.apply("zh_CN"), QString("zh_CN"));
    {
      MainWindow window(&studio);
      QCOMPARE(window.menuBar()->actions().first()->text(), QString::fromUtf8("文件(&F)"));
    }
    QCOMPARE(language.apply("en"), QString("en"));
    MainWindow window(&studio);
    QCOMPARE(window.menuBar()->actions().first()->text(), QString("&File"));
  }

  void remoteChatAgainstOurOwnServer() {
    const std::string cli = T::bin_dir() + "/deltafin";
    // The build makes deltafin before this test (add_dependencies): a missing binary is a failure.
    const T::RunResult help = T::run_process({cli, "--help"});
    QVERIFY2(help.code == 0 && help.out.find("serve") != std::string::npos, (cli + ": " + help.err).c_str());
    QProcess server;
    server.setProcessChannelMode(QProcess::MergedChannels);
    server.start(QString::fromStdString(cli), {"serve", "--model-root", demoModel(), "--port", "0"});
    QVERIFY(server.waitForStarted());
    QString base;
    QString output;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
          output += QString::fromUtf8(server.readAll());
          const QRegularExpressionMatch m = QRegularExpression("listening on (http://[^ ]+)").match(output);
          if (m.hasMatch()) base = m.captured(1);
          return !base.isEmpty() || server.state() == QProcess::NotRunning;
        }(),
        120000);
    QVERIFY2(!base.isEmpty(), qPrintable(output));

    const QString data = QString::fromStdString(T::temp_dir("gui-remote"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    studio.settings().remoteEnabled = true;
    studio.settings().remoteUrl = base + "/v1";
    QSignalSpy ready(studio.remote(), &ChatBackend::ready);
    studio.applySettings();
    QTRY_VERIFY_WITH_TIMEOUT(studio.remote()->isReady(), 60000);
    QCOMPARE(studio.chatBackend(), static_cast<ChatBackend*>(studio.remote()));
    QVERIFY(window.statusPanel()->backendText().contains("Remote"));

    ChatView* chat = window.chatView();
    QSignalSpy chunks(studio.remote(), &ChatBackend::chunk);
    QSignalSpy finished(studio.remote(), &ChatBackend::finished);
    chat->input()->setPlainText("Hello over HTTP");
    chat->send();
    QVERIFY(chat->isGenerating());
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000);
    QCOMPARE(finished.count(), 1);
    QVERIFY(chunks.count() >= 1);
    const StoredMessage& reply = chat->messageWidgets().last()->message();
    QVERIFY(reply.error.isEmpty());
    QVERIFY(!reply.content.isEmpty() || !reply.reasoning.isEmpty());
    QVERIFY(reply.stats.newTokens > 0);
    server.terminate();
    QVERIFY(server.waitForFinished(30000));
  }

  void screenshotModeWritesPngs() {
    const QString out = QString::fromStdString(T::temp_dir("gui-shot"));
    for (const QString& view : {QString("setup"), QString("cache")}) {
      const std::string file = (out + "/" + view + ".png").toStdString();
      const T::RunResult r = T::run_process({T::bin_dir() + "/deltafin-studio", "--screenshot", file, "--view",
                                             view.toStdString(), "--model-root", demoModel().toStdString()},
                                            300000);
      QVERIFY2(r.code == 0, (r.out + r.err).c_str());
      QImage img(QString::fromStdString(file));
      QVERIFY2(!img.isNull(), file.c_str());
      QVERIFY(img.width() >= 600 && img.height() >= 400);
    }
    const T::RunResult bad = T::run_process(
        {T::bin_dir() + "/deltafin-studio", "--screenshot", (out + "/x.png").toStdString(), "--view", "nonsense"});
    QCOMPARE(bad.code, 2);
    QVERIFY(QString::fromStdString(bad.err).contains("unknown view"));
  }
};

QTEST_MAIN(TestGui)
#include "test_gui.moc"
