// The install commands as a user runs them: setup (progress, --json, --dry-run),
// setup-qwen, doctor and cache, against the local test hub.
#include <QtTest/QtTest>

#include <QProcess>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"
#include "test_hub.h"

namespace fs = std::filesystem;
using namespace deltafin;
using namespace deltafin::test;

namespace {

// run_process cannot serve the in-process hub while it blocks, so this pumps the event loop.
RunResult run(const std::vector<std::string>& args) {
  QProcess p;
  QStringList a;
  for (const auto& s : args) a << QString::fromStdString(s);
  p.start(QString::fromStdString(bin_dir() + "/deltafin"), a);
  RunResult r;
  if (!p.waitForStarted(10000)) return r;
  p.waitForFinished(300000);
  r.out = p.readAllStandardOutput().toStdString();
  r.err = p.readAllStandardError().toStdString();
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

}  // namespace

class TestInstallCli : public QObject {
  Q_OBJECT
  std::unique_ptr<TestHub> hub_;

  std::vector<std::string> hub_args(const std::string& root) {
    return {"--hub-url", hub_->url(), "--model-root", root, "--revision", "main", "--stall-timeout", "5"};
  }
  std::vector<std::string> cmd(std::vector<std::string> head, const std::string& root) {
    for (auto& a : hub_args(root)) head.push_back(a);
    return head;
  }

 private slots:
  void initTestCase() {
    hub_ = std::make_unique<TestHub>();
    hub_->add_repo("moonshotai/Kimi-K3", "main", fixtures_dir() + "/k3-tiny");
    hub_->add_repo("Inferact/Kimi-K3-DSpark", "main", fixtures_dir() + "/dspark-tiny");
    hub_->add_repo("Qwen/Qwen3-0.6B-Base", "main", fixtures_dir() + "/qwen3-tiny");
    hub_->add_repo("Qwen/Qwen3-1.7B-Base", "main", fixtures_dir() + "/qwen3-tiny");
  }

  void setupNeedsAMode() {
    RunResult r = run({"setup", "--model-root", temp_dir("nomode")});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.find("--full or --stream") != std::string::npos);
  }

  void dryRunShowsThePlanAndDownloadsNothing() {
    const std::string root = temp_dir("dry");
    RunResult r = run(cmd({"setup", "--full", "--include-qwen", "--dry-run"}, root));
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY(r.err.find("moonshotai/Kimi-K3@main") != std::string::npos);
    QVERIFY(r.err.find("Inferact/Kimi-K3-DSpark@main") != std::string::npos);
    QVERIFY(r.err.find("Qwen/Qwen3-1.7B-Base@main") != std::string::npos);
    QVERIFY(r.err.find("Dry run") != std::string::npos);
    QVERIFY(!fs::exists(root + "/config.json"));
  }

  void fullSetupWithJsonEventsThenDoctorAndCacheVerify() {
    const std::string root = temp_dir("full");
    RunResult r = run(cmd({"setup", "--full", "--json"}, root));
    QVERIFY2(r.code == 0, r.err.c_str());
    int verified = 0;
    bool finished_ok = false, progress = false;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["event"] == "file" && j["state"] == "verified") ++verified;
      if (j["event"] == "progress") progress = true;
      if (j["event"] == "finished") finished_ok = j["ok"].get<bool>();
    }
    QVERIFY(progress);
    QVERIFY(finished_ok);
    QCOMPARE(verified,
             int(std::distance(fs::directory_iterator(fixtures_dir() + "/k3-tiny"), fs::directory_iterator{}) +
                 std::distance(fs::directory_iterator(fixtures_dir() + "/dspark-tiny"), fs::directory_iterator{})));

    RunResult doc = run({"doctor", "--model-root", root, "--json"});
    QVERIFY2(doc.code == 0, doc.out.c_str());
    auto rep = nlohmann::json::parse(doc.out);
    QVERIFY(rep["healthy"].get<bool>());
    bool backend = false;
    for (const auto& f : rep["findings"]) backend |= f["subject"] == "backend";
    QVERIFY(backend);
    // Transparent huge pages: where the system has them, doctor names the active mode (read here
    // from the same sysfs line) and notes it only when they are off.
    if (std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled"); thp) {
      std::string line;
      std::getline(thp, line);
      const std::string mode = line.substr(line.find('[') + 1, line.find(']') - line.find('[') - 1);
      int memory = 0;
      for (const auto& f : rep["findings"])
        if (f["subject"] == "memory") {
          ++memory;
          QVERIFY2(f["detail"].get<std::string>().find("(" + mode + ")") != std::string::npos,
                   f["detail"].get<std::string>().c_str());
          QCOMPARE(f["level"].get<std::string>(), std::string(mode == "never" ? "note" : "ok"));
        }
      QCOMPARE(memory, 1);
    }

    // Damage a file: doctor --verify names it and says what to do; plain doctor only checks sizes.
    {
      std::fstream f(root + "/model-00002-of-000003.safetensors", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(5000);
      f.put('\x55');
    }
    RunResult bad = run({"doctor", "--model-root", root, "--verify"});
    QCOMPARE(bad.code, 1);
    QVERIFY(bad.out.find("model-00002-of-000003.safetensors does not match") != std::string::npos);
    QVERIFY(bad.out.find("-> delete it and run deltafin setup --full again") != std::string::npos);
    RunResult cv = run({"cache", "verify", "--model-root", root});
    QCOMPARE(cv.code, 1);
    // Removing the damaged file and running setup again repairs the install.
    fs::remove(root + "/model-00002-of-000003.safetensors");
    QCOMPARE(run({"doctor", "--model-root", root}).code, 1);
    QCOMPARE(run(cmd({"setup", "--full"}, root)).code, 0);
    QCOMPARE(run({"doctor", "--model-root", root, "--verify"}).code, 0);
  }

  void setupQwenInstallsOnlyTheAddOns() {
    const std::string root = temp_dir("qwen");
    RunResult r = run(cmd({"setup-qwen"}, root));
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY(read_file(root + "/addons/qwen3-0.6b-base/model.safetensors") ==
            read_file(fixtures_dir() + "/qwen3-tiny/model.safetensors"));
    QVERIFY(fs::exists(root + "/addons/qwen3-1.7b-base/config.json"));
    QVERIFY(!fs::exists(root + "/config.json"));
  }

  void streamSetupAndCacheCommands() {
    const std::string root = temp_dir("stream");
    RunResult r = run(cmd({"setup", "--stream", "--cache-size", "40KB"}, root));
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY(fs::exists(root + "/.deltafin/stream.json"));
    RunResult size = run({"cache", "size", "--model-root", root, "--json"});
    QVERIFY2(size.code == 0, size.err.c_str());
    auto s = nlohmann::json::parse(size.out);
    QCOMPARE(s["cached_experts"].get<int>(), 0);
    QCOMPARE(s["cap_bytes"].get<uint64_t>(), uint64_t(40000));

    RunResult warm = run({"cache", "warm", "--model-root", root, "--layer", "2", "--experts", "1,4,9"});
    QVERIFY2(warm.code == 0, warm.err.c_str());
    RunResult list = run({"cache", "list", "--model-root", root, "--json"});
    QCOMPARE(nlohmann::json::parse(list.out)["2"], nlohmann::json::array({1, 4, 9}));
    QCOMPARE(run({"cache", "verify", "--model-root", root}).code, 0);
    RunResult doc = run({"doctor", "--model-root", root});
    QVERIFY2(doc.code == 0, doc.out.c_str());
    QVERIFY(doc.out.find("3 of 144 expert slots cached") != std::string::npos);

    RunResult ev = run({"cache", "evict", "--model-root", root, "--all"});
    QVERIFY2(ev.code == 0, ev.err.c_str());
    QCOMPARE(
        nlohmann::json::parse(run({"cache", "size", "--model-root", root, "--json"}).out)["cached_experts"].get<int>(),
        0);

    // A whole layer does not fit in a cap of 12 experts: a clear error.
    RunResult big = run({"cache", "warm", "--model-root", root, "--layer", "3"});
    QCOMPARE(big.code, 1);
    QVERIFY(big.err.find("--cache-size") != std::string::npos);
  }

  void cacheOnAFullInstallExplainsItself() {
    RunResult r = run({"cache", "size", "--model-root", temp_dir("nostream")});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.find("not a stream install") != std::string::npos);
  }

  void secondInstallerIsLockedOut() {
    const std::string root = temp_dir("locked");
    hub_->set_bytes_per_second(50 * 1000);
    QProcess first;
    QStringList a = {"setup", "--full"};
    for (const auto& s : hub_args(root)) a << QString::fromStdString(s);
    first.start(QString::fromStdString(bin_dir() + "/deltafin"), a);
    QVERIFY(first.waitForStarted());
    // The install record is written after the lock is taken and the plan made.
    QTRY_VERIFY_WITH_TIMEOUT(fs::exists(root + "/.deltafin/installed.json"), 20000);
    RunResult second = run(cmd({"setup", "--full"}, root));
    first.kill();
    first.waitForFinished();
    hub_->set_bytes_per_second(0);
    QCOMPARE(second.code, 1);
    QVERIFY(second.err.find("another deltafin installer") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestInstallCli)
#include "test_install_cli.moc"
