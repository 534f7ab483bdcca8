// The Jobs panel's upgrade and add-on jobs, driven through the real menus and dialogs: an
// upgrade of a checkout from a local git remote (done, and refused with what to do), and the
// drafters installed from the local test hub into an existing K3 install, after which the chat
// replies with DSpark's guesses verified by K3.
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QJsonObject>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QTreeWidget>

#include <memory>
#include <string>
#include <vector>

#include "chat_view.h"
#include "install/pinned_repos.h"
#include "install/test_hub.h"
#include "install_job.h"
#include "job_manager.h"
#include "jobs_view.h"
#include "local_engine.h"
#include "main_window.h"
#include "message_widget.h"
#include "settings_dialog.h"
#include "setup_wizard.h"
#include "status_panel.h"
#include "studio.h"
#include "support/test_support.h"
#include "upgrade_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>

using namespace deltafin::gui;
namespace T = deltafin::test;

namespace {

QByteArray slurp(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void spit(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(bytes);
}

// git with a fixed identity, so commits work on a machine without a git config.
QString git(const QString& dir, const QStringList& args) {
  std::vector<std::string> argv = {"git",
                                   "-C",
                                   dir.toStdString(),
                                   "-c",
                                   "user.name=Deltafin Test",
                                   "-c",
                                   "user.email=test@deltafin.invalid",
                                   "-c",
                                   "init.defaultBranch=main"};
  for (const QString& a : args) argv.push_back(a.toStdString());
  const T::RunResult r = T::run_process(argv);
  if (r.code != 0) qWarning("git %s failed: %s", qPrintable(args.join(' ')), r.err.c_str());
  return QString::fromStdString(r.out).trimmed();
}

// Triggers a File menu entry by its object name.
void trigger(MainWindow& window, const char* name) {
  QAction* a = window.findChild<QAction*>(QString::fromLatin1(name));
  QVERIFY2(a, name);
  a->trigger();
}

template <typename W>
W* openedDialog(MainWindow& window) {
  W* w = nullptr;
  for (W* candidate : window.findChildren<W*>())
    if (candidate->isVisible()) w = candidate;
  return w;
}

void waitReady(LocalEngine* engine) {
  QSignalSpy failed(engine, &ChatBackend::unavailable);
  QTRY_VERIFY_WITH_TIMEOUT(engine->isReady() || failed.count() > 0, 180000);
  if (!failed.isEmpty()) QFAIL(qPrintable(failed.first().first().toString()));
}

// Sends one message in a new conversation and returns the finished reply's stats.
GenerationStats chatOnce(MainWindow& window, LocalEngine* engine, const QString& text, StoredMessage* reply) {
  ChatView* chat = window.chatView();
  chat->newConversation();
  QSignalSpy finished(engine, &ChatBackend::finished);
  chat->input()->setPlainText(text);
  chat->send();
  if (!QTest::qWaitFor([&] { return !chat->isGenerating(); }, 300000)) return {};
  if (finished.count() != 1) return {};
  *reply = chat->messageWidgets().last()->message();
  return finished.first().at(1).value<GenerationStats>();
}

}  // namespace

class TestGuiJobs : public QObject {
  Q_OBJECT

  QString base_, remote_, seed_, work_, build_;

  void publish(const QByteArray& version) {
    spit(seed_ + "/version.txt", version);
    git(seed_, {"commit", "-q", "-am", "release " + QString::fromLatin1(version)});
    git(seed_, {"push", "-q", "origin", "main"});
  }

 private slots:
  void initTestCase() {
    // A checkout of a tiny CMake project with a bare remote, as `deltafin upgrade` sees a source build.
    base_ = QString::fromStdString(T::temp_dir("gui-upgrade"));
    remote_ = base_ + "/remote.git";
    seed_ = base_ + "/seed";
    work_ = base_ + "/work";
    build_ = base_ + "/build";
    QVERIFY(QDir().mkpath(seed_));
    git(base_, {"init", "-q", "--bare", "-b", "main", remote_});
    git(seed_, {"init", "-q", "-b", "main"});
    spit(seed_ + "/CMakeLists.txt",
         "cmake_minimum_required(VERSION 3.25)\nproject(upgrade_fixture NONE)\n"
         "add_custom_target(stamp ALL COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/version.txt "
         "${CMAKE_BINARY_DIR}/built.txt)\n");
    spit(seed_ + "/version.txt", "v1");
    git(seed_, {"add", "."});
    git(seed_, {"commit", "-q", "-m", "v1"});
    git(seed_, {"remote", "add", "origin", remote_});
    git(seed_, {"push", "-q", "-u", "origin", "main"});
    git(base_, {"clone", "-q", remote_, work_});
    QCOMPARE(slurp(work_ + "/version.txt"), QByteArray("v1"));
    QCOMPARE(T::run_process({"cmake", "-S", work_.toStdString(), "-B", build_.toStdString()}).code, 0);
    QCOMPARE(T::run_process({"cmake", "--build", build_.toStdString()}).code, 0);
    QCOMPARE(slurp(build_ + "/built.txt"), QByteArray("v1"));
  }

  void upgradeRunsAsAJobFromTheMenu() {
    publish("v2");
    const QString data = QString::fromStdString(T::temp_dir("gui-upgrade-data"));
    Studio studio({QString::fromStdString(T::build_dir() + "/demo-model"), data});
    MainWindow window(&studio);
    window.show();

    trigger(window, "upgradeAction");
    auto* dialog = openedDialog<UpgradeDialog>(window);
    QVERIFY(dialog);
    // By default it upgrades the checkout this app was built from; here, the test's checkout.
    QCOMPARE(dialog->findChild<QLineEdit*>("upgradeSource")->text(), builtFromSourceDir());
    dialog->findChild<QLineEdit*>("upgradeSource")->setText(work_);
    dialog->findChild<QLineEdit*>("upgradeBuild")->setText(build_);
    QTest::mouseClick(dialog->findChild<QPushButton*>("upgradeStart"), Qt::LeftButton);

    QCOMPARE(studio.jobs()->jobs().size(), 1);
    InstallJob* job = studio.jobs()->jobs().first();
    QVERIFY(job->isUpgrade());
    JobsView* view = window.jobsView();
    QCOMPARE(view->selectedId(), job->id());
    if (job->isActive()) {
      // Git and CMake are not cut off halfway: no pause, no cancel while it runs.
      QVERIFY(!view->pauseButton()->isEnabled());
      QVERIFY(!view->cancelButton()->isEnabled());
      QCOMPARE(view->progressBar()->maximum(), 0);  // busy, it has steps, not bytes
    }
    QTRY_VERIFY_WITH_TIMEOUT(!job->isActive(), 300000);
    QVERIFY2(job->state() == InstallJob::State::Done, qPrintable(job->errorWhat() + " " + job->errorTodo()));
    QCOMPARE(slurp(work_ + "/version.txt"), QByteArray("v2"));
    QCOMPARE(git(work_, {"rev-parse", "HEAD"}), git(seed_, {"rev-parse", "HEAD"}));
    QCOMPARE(slurp(build_ + "/built.txt"), QByteArray("v2"));  // rebuilt with its recorded configuration
    const QString log = view->findChild<QPlainTextEdit*>("jobLog")->toPlainText();
    QVERIFY2(log.contains("Fast-forwarding"), qPrintable(log));
    QVERIFY2(log.contains("Building"), qPrintable(log));
    QVERIFY(job->outcome().contains(git(work_, {"rev-parse", "--short=12", "HEAD"})));
    QCOMPARE(view->progressBar()->value(), view->progressBar()->maximum());
    QVERIFY(!view->findChild<QLabel*>("jobError")->isVisible());

    // A local edit: the next upgrade is refused, saying what failed and what to do; nothing moves.
    publish("v3");
    spit(work_ + "/version.txt", "local edit");
    const QString head = git(work_, {"rev-parse", "HEAD"});
    trigger(window, "upgradeAction");
    dialog = openedDialog<UpgradeDialog>(window);
    QVERIFY(dialog);
    dialog->findChild<QLineEdit*>("upgradeSource")->setText(work_);
    dialog->findChild<QLineEdit*>("upgradeBuild")->setText(build_);
    QTest::mouseClick(dialog->findChild<QPushButton*>("upgradeStart"), Qt::LeftButton);
    QCOMPARE(studio.jobs()->jobs().size(), 2);
    InstallJob* refused = studio.jobs()->jobs().last();
    QCOMPARE(view->selectedId(), refused->id());
    QTRY_VERIFY_WITH_TIMEOUT(!refused->isActive(), 120000);
    QCOMPARE(refused->state(), InstallJob::State::Failed);
    QVERIFY2(refused->errorWhat().contains("uncommitted changes"), qPrintable(refused->errorWhat()));
    QVERIFY(refused->errorWhat().contains("version.txt"));
    QVERIFY(refused->errorTodo().contains("git stash"));
    auto* error = view->findChild<QLabel*>("jobError");
    QVERIFY(error->isVisible());
    QVERIFY(error->text().contains(refused->errorTodo().toHtmlEscaped()));
    QVERIFY(view->resumeButton()->isEnabled());  // run it again once the checkout is clean
    QCOMPARE(git(work_, {"rev-parse", "HEAD"}), head);
    QCOMPARE(slurp(work_ + "/version.txt"), QByteArray("local edit"));

    // Clean again: Resume runs the same upgrade to the end.
    git(work_, {"checkout", "-q", "--", "version.txt"});
    QTest::mouseClick(view->resumeButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!refused->isActive(), 300000);
    QVERIFY2(refused->state() == InstallJob::State::Done, qPrintable(refused->errorWhat()));
    QCOMPARE(slurp(build_ + "/built.txt"), QByteArray("v3"));

    // An upgrade that was running when the app quit is reported, not silently restarted.
    QJsonObject saved = refused->toJson();
    saved.insert("state", "interrupted");
    std::unique_ptr<InstallJob> reloaded(InstallJob::fromJson(saved, nullptr));
    QCOMPARE(reloaded->state(), InstallJob::State::Failed);
    QVERIFY(!reloaded->errorWhat().isEmpty());
    QVERIFY(reloaded->isUpgrade());
  }

  void addonsInstallIntoAnExistingInstallAndDraftInTheChat() {
    // The hub serves the K3 fixture as K3 and its paired DSpark fixture as DSpark.
    T::TestHub hub;
    for (const deltafin::PinnedRepo& p : deltafin::pinned_repos()) {
      if (p.role == deltafin::RepoRole::K3) hub.add_repo(p.repo, p.revision, T::fixtures_dir() + "/k3-tiny");
      if (p.role == deltafin::RepoRole::DSpark) hub.add_repo(p.repo, p.revision, T::fixtures_dir() + "/dspark-tiny");
      if (p.role == deltafin::RepoRole::Qwen) hub.add_repo(p.repo, p.revision, T::fixtures_dir() + "/qwen3-tiny");
    }
    const QString data = QString::fromStdString(T::temp_dir("gui-addons"));
    const QString root = data + "/models/kimi-k3";
    // An existing K3 install without any drafter.
    InstallRequest k3;
    k3.modelRoot = root;
    k3.hubUrl = QString::fromStdString(hub.url());
    k3.withDspark = false;
    runInstall(k3, {}, nullptr);
    QVERIFY(QFileInfo::exists(root + "/config.json"));
    QVERIFY(!QFileInfo::exists(root + "/addons"));
    const QByteArray shard = slurp(root + "/model-00001-of-000003.safetensors");

    Studio studio({root, data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    // Automatic drafting without DSpark installed: the n-gram drafter, which needs no model.
    QCOMPARE(studio.engine()->info().drafter, QString("ngram"));

    trigger(window, "addonsAction");
    auto* wizard = openedDialog<SetupWizard>(window);
    QVERIFY(wizard);
    QCOMPARE(wizard->purpose(), SetupWizard::Purpose::Addons);
    QCOMPARE(wizard->currentId(), int(SetupWizard::ModePage));
    QVERIFY(!wizard->findChild<QRadioButton*>("fullInstall")->isVisible());
    QVERIFY(wizard->findChild<QLabel*>("addonsNote")->isVisible());
    wizard->findChild<QLineEdit*>("modelFolder")->setText(root);
    wizard->findChild<QLineEdit*>("hubUrl")->setText(QString::fromStdString(hub.url()));
    wizard->next();
    QCOMPARE(wizard->currentId(), int(SetupWizard::AddonsPage));
    wizard->findChild<QCheckBox*>("withDspark")->setChecked(true);
    wizard->findChild<QCheckBox*>("withQwen")->setChecked(true);
    wizard->next();
    QCOMPARE(wizard->currentId(), int(SetupWizard::PlanPage));
    QTRY_VERIFY_WITH_TIMEOUT(wizard->planReady() || !wizard->planError().isEmpty(), 60000);
    QVERIFY2(wizard->planReady(), qPrintable(wizard->planError()));
    // DSpark and the two Qwen3 drafters; K3 itself is not part of the plan.
    QStringList roles;
    for (const PlannedRepoView& r : wizard->plan().repos) roles << r.role;
    roles.sort();
    QCOMPARE(roles, QStringList({"dspark", "qwen", "qwen"}));
    QTest::mouseClick(wizard->button(QWizard::FinishButton), Qt::LeftButton);

    QCOMPARE(studio.jobs()->jobs().size(), 1);
    InstallJob* job = studio.jobs()->jobs().first();
    QVERIFY(!job->request().k3);
    QVERIFY(job->canPause());
    QTRY_VERIFY_WITH_TIMEOUT(!job->isActive(), 120000);
    QVERIFY2(job->state() == InstallJob::State::Done, qPrintable(job->errorWhat() + " " + job->errorTodo()));
    for (const char* f : {"config.json", "model.safetensors"})
      QCOMPARE(slurp(root + "/addons/kimi-k3-dspark/" + f),
               slurp(QString::fromStdString(T::fixtures_dir()) + "/dspark-tiny/" + f));
    QCOMPARE(slurp(root + "/addons/qwen3-0.6b-base/model.safetensors"),
             slurp(QString::fromStdString(T::fixtures_dir()) + "/qwen3-tiny/model.safetensors"));
    QCOMPARE(slurp(root + "/model-00001-of-000003.safetensors"), shard);  // K3 untouched

    // The loaded engine looks for drafters again and now finds DSpark next to K3.
    QTRY_COMPARE_WITH_TIMEOUT(studio.engine()->info().drafter, QString("dspark"), 60000);
    QTRY_VERIFY(window.statusPanel()->backendText().contains("dspark"));

    StoredMessage drafted;
    const GenerationStats withDspark = chatOnce(window, studio.engine(), "Tell me about the sea.", &drafted);
    QCOMPARE(withDspark.drafter, QString("dspark"));
    QVERIFY2(withDspark.proposed > 0, "DSpark made no guesses");
    QVERIFY(withDspark.accepted <= withDspark.proposed);
    qInfo("DSpark on k3-tiny through the chat: %d of %d guesses accepted, %d tokens", withDspark.accepted,
          withDspark.proposed, withDspark.newTokens);
    auto* stats = window.chatView()->messageWidgets().last()->findChild<QLabel*>("messageStats");
    QVERIFY(stats->text().contains(QString::number(withDspark.proposed)));
    QVERIFY(stats->text().contains("dspark"));

    // Settings: drafter off. The engine decodes plainly, and the reply is the same text.
    SettingsDialog* settings = window.openSettings();
    auto* drafter = settings->findChild<QComboBox*>("drafterCombo");
    drafter->setCurrentIndex(drafter->findData("off"));
    QTest::mouseClick(settings->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok), Qt::LeftButton);
    QCOMPARE(studio.settings().drafter, QString("off"));
    QTRY_VERIFY_WITH_TIMEOUT(studio.engine()->isReady() && studio.engine()->info().drafter.isEmpty(), 60000);
    StoredMessage plain;
    const GenerationStats off = chatOnce(window, studio.engine(), "Tell me about the sea.", &plain);
    QVERIFY(off.drafter.isEmpty());
    QCOMPARE(off.proposed, 0);
    QCOMPARE(off.newTokens, withDspark.newTokens);
    QCOMPARE(plain.reasoning + plain.content, drafted.reasoning + drafted.content);
  }
};

QTEST_MAIN(TestGuiJobs)
#include "test_gui_jobs.moc"
