// Kills the real `deltafin setup` process with SIGKILL at random points, 20
// times, then lets it finish: every file must end up verified and exact.
#include <QtTest/QtTest>

#include <QProcess>
#include <QRandomGenerator>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "install/install_manifest.h"
#include "support/test_support.h"
#include "test_hub.h"

namespace fs = std::filesystem;
using namespace deltafin;
using namespace deltafin::test;

class TestInstallKill : public QObject {
  Q_OBJECT

 private slots:
  void killedTwentyTimesThenCompletes() {
    TestHub hub;
    hub.add_repo("moonshotai/Kimi-K3", "main", fixtures_dir() + "/k3-tiny");
    hub.add_repo("Inferact/Kimi-K3-DSpark", "main", fixtures_dir() + "/dspark-tiny");
    // Slow enough that every kill lands mid-install: about 3 MB at 100 kB/s per connection
    // takes several seconds, far more than the 20 short runs add up to.
    hub.set_bytes_per_second(100 * 1000);
    const std::string root = temp_dir("kill");
    const QString exe = QString::fromStdString(bin_dir() + "/deltafin");
    const QStringList args = {"setup",           "--full",
                              "--hub-url",       QString::fromStdString(hub.url()),
                              "--model-root",    QString::fromStdString(root),
                              "--revision",      "main",
                              "--parts",         "3",
                              "--part-size",     "64KiB",
                              "--stall-timeout", "5"};
    const quint32 seed = QRandomGenerator::global()->generate();
    qInfo("kill points seeded with %u", seed);
    QRandomGenerator rng(seed);
    int killed_running = 0;
    for (int i = 0; i < 20; ++i) {
      QProcess p;
      p.start(exe, args);
      QVERIFY(p.waitForStarted(10000));
      const int after_ms = rng.bounded(30, 400);
      if (!p.waitForFinished(after_ms)) {
        p.kill();  // SIGKILL
        p.waitForFinished(10000);
        ++killed_running;
      } else {
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
      }
    }
    qInfo("%d of 20 runs were killed mid-install", killed_running);
    QVERIFY(killed_running > 0);

    QProcess last;
    last.start(exe, args);
    QVERIFY(last.waitForFinished(120000));
    QVERIFY2(last.exitCode() == 0, last.readAllStandardError().constData());

    for (const auto& [dir, src] : std::vector<std::pair<std::string, std::string>>{
             {root, fixtures_dir() + "/k3-tiny"}, {root + "/addons/kimi-k3-dspark", fixtures_dir() + "/dspark-tiny"}})
      for (const auto& e : fs::directory_iterator(src)) {
        const std::string dest = dir + "/" + e.path().filename().string();
        QVERIFY2(read_file(dest) == read_file(e.path().string()), dest.c_str());
        QVERIFY(!fs::exists(dest + ".partial"));
      }
    auto m = InstallManifest::load(root);
    QCOMPARE(m.repos.size(), size_t(2));
    for (const auto& r : m.repos) {
      QVERIFY(r.complete);
      for (const auto& f : r.files) QCOMPARE(f.state, std::string("verified"));
    }
  }
};

QTEST_GUILESS_MAIN(TestInstallKill)
#include "test_install_kill.moc"
