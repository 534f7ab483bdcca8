// `deltafin upgrade` against a local git remote: up to date, behind (fast-forward
// and rebuild with the recorded configuration), dirty, detached, diverged.
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "install/subprocess.h"
#include "install/upgrade.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace deltafin;
using namespace deltafin::test;

namespace {

void write(const std::string& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string git(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(),
              {"git", "-C", dir, "-c", "user.name=Deltafin Test", "-c", "user.email=test@deltafin.invalid", "-c",
               "init.defaultBranch=main", "-c", "advice.detachedHead=false"});
  ProcessResult r = run_command(args);
  if (r.code != 0) throw Error("git " + args[9] + " failed: " + r.err);
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

class TestInstallUpgrade : public QObject {
  Q_OBJECT
  std::string base_, remote_, seed_, work_, build_, models_;
  std::vector<std::string> said_;

  UpgradeOptions options(bool dry = false) {
    UpgradeOptions o;
    o.source_dir = work_;
    o.build_dir = build_;
    o.dry_run = dry;
    return o;
  }
  UpgradeResult upgrade(bool dry = false) {
    return run_upgrade(options(dry), [&](const std::string& l) { said_.push_back(l); });
  }
  std::string upgrade_error() {
    try {
      upgrade();
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  }
  void publish(const std::string& version) {
    write(seed_ + "/version.txt", version);
    git(seed_, {"commit", "-q", "-am", "release " + version});
    git(seed_, {"push", "-q", "origin", "main"});
  }

 private slots:
  void initTestCase() {
    base_ = temp_dir("upgrade");
    remote_ = base_ + "/remote.git";
    seed_ = base_ + "/seed";
    work_ = base_ + "/work";
    build_ = base_ + "/build";
    models_ = base_ + "/models";
    fs::create_directories(seed_);
    git(base_, {"init", "-q", "--bare", "-b", "main", remote_});
    git(seed_, {"init", "-q", "-b", "main"});
    // A tiny CMake project standing in for deltafin: its build records the version and the CUDA switch.
    write(seed_ + "/CMakeLists.txt",
          "cmake_minimum_required(VERSION 3.25)\nproject(upgrade_fixture NONE)\noption(DELTAFIN_CUDA \"cuda\" OFF)\n"
          "add_custom_target(stamp ALL COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/version.txt "
          "${CMAKE_BINARY_DIR}/built-cuda-${DELTAFIN_CUDA}.txt)\n");
    write(seed_ + "/version.txt", "v1");
    git(seed_, {"add", "."});
    git(seed_, {"commit", "-q", "-m", "v1"});
    git(seed_, {"remote", "add", "origin", remote_});
    git(seed_, {"push", "-q", "-u", "origin", "main"});
    git(base_, {"clone", "-q", remote_, work_});
    // A "CUDA" build: the switch must survive the upgrade's rebuild.
    ProcessResult cfg = run_command({"cmake", "-S", work_, "-B", build_, "-DDELTAFIN_CUDA=ON"});
    QVERIFY2(cfg.code == 0, cfg.err.c_str());
    QCOMPARE(run_command({"cmake", "--build", build_}).code, 0);
    QCOMPARE(read_file(build_ + "/built-cuda-ON.txt"), std::string("v1"));
    fs::create_directories(models_ + "/.deltafin");
    write(models_ + "/config.json", "{\"untouched\": true}");
  }

  void upToDateDoesNothing() {
    const std::string head = git(work_, {"rev-parse", "HEAD"});
    QCOMPARE(int(upgrade().outcome), int(UpgradeResult::Outcome::UpToDate));
    QCOMPARE(git(work_, {"rev-parse", "HEAD"}), head);
  }

  void behindFastForwardsAndRebuildsWithTheRecordedConfiguration() {
    publish("v2");
    const auto mtime = fs::last_write_time(models_ + "/config.json");
    UpgradeResult dry = upgrade(true);
    QCOMPARE(int(dry.outcome), int(UpgradeResult::Outcome::WouldUpgrade));
    QCOMPARE(read_file(work_ + "/version.txt"), std::string("v1"));  // a dry run changes nothing
    UpgradeResult r = upgrade();
    QCOMPARE(int(r.outcome), int(UpgradeResult::Outcome::Upgraded));
    QCOMPARE(r.commits, 1);
    QCOMPARE(git(work_, {"rev-parse", "HEAD"}), git(seed_, {"rev-parse", "HEAD"}));
    QCOMPARE(read_file(build_ + "/built-cuda-ON.txt"), std::string("v2"));
    QVERIFY(!fs::exists(build_ + "/built-cuda-OFF.txt"));
    QVERIFY(read_file(build_ + "/CMakeCache.txt").find("DELTAFIN_CUDA:BOOL=ON") != std::string::npos);
    QCOMPARE(read_file(models_ + "/config.json"), std::string("{\"untouched\": true}"));
    QVERIFY(fs::last_write_time(models_ + "/config.json") == mtime);
  }

  void dirtyCheckoutIsRefused() {
    publish("v3");
    write(work_ + "/version.txt", "local edit");
    const std::string head = git(work_, {"rev-parse", "HEAD"});
    const std::string err = upgrade_error();
    QVERIFY2(err.find("uncommitted changes") != std::string::npos, err.c_str());
    QVERIFY(err.find("version.txt") != std::string::npos);
    QCOMPARE(git(work_, {"rev-parse", "HEAD"}), head);
    QCOMPARE(read_file(work_ + "/version.txt"), std::string("local edit"));
    git(work_, {"checkout", "-q", "--", "version.txt"});
  }

  void detachedCheckoutIsRefused() {
    git(work_, {"checkout", "-q", "--detach", "HEAD"});
    const std::string err = upgrade_error();
    QVERIFY2(err.find("detached HEAD") != std::string::npos, err.c_str());
    QVERIFY(err.find("git switch") != std::string::npos);
    git(work_, {"checkout", "-q", "main"});
  }

  void divergedCheckoutIsRefused() {
    // v3 is upstream already; a local commit on top of the old base diverges.
    write(work_ + "/local.txt", "mine");
    git(work_, {"add", "local.txt"});
    git(work_, {"commit", "-q", "-m", "local work"});
    const std::string head = git(work_, {"rev-parse", "HEAD"});
    const std::string err = upgrade_error();
    QVERIFY2(err.find("diverged") != std::string::npos, err.c_str());
    QVERIFY(err.find("1 local and 1 upstream") != std::string::npos);
    QCOMPARE(git(work_, {"rev-parse", "HEAD"}), head);

    // The CLI says the same and fails.
    RunResult cli = run_process({bin_dir() + "/deltafin", "upgrade", "--source-dir", work_, "--build-dir", build_});
    QCOMPARE(cli.code, 1);
    QVERIFY(cli.err.find("diverged") != std::string::npos);
  }

  void aheadOfUpstreamHasNothingToDo() {
    git(work_, {"reset", "-q", "--hard", "origin/main"});
    write(work_ + "/local.txt", "mine");
    git(work_, {"add", "local.txt"});
    git(work_, {"commit", "-q", "-m", "local work on top"});
    QCOMPARE(int(upgrade().outcome), int(UpgradeResult::Outcome::AheadOfUpstream));
  }
};

QTEST_GUILESS_MAIN(TestInstallUpgrade)
#include "test_install_upgrade.moc"
