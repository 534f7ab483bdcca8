// The test harness itself: error accumulators keep a NaN, and the skip policy of
// tests/support/test_support.h seen from outside, by running real test programs: a missing npm
// package skips locally and fails under DELTAFIN_NO_SKIPS=1 (CI), a missing GPU skips and fails
// under DELTAFIN_REQUIRE_GPU=1.
#include <QProcess>
#include <QProcessEnvironment>

#include <cmath>
#include <limits>

#include "support/test_support.h"

using namespace deltafin;

namespace {

struct Outcome {
  int code = -1;
  std::string output;
};

// Runs a test program of this build with extra environment variables; merged output.
Outcome run_test_program(const std::string& name, const std::vector<std::pair<QString, QString>>& env) {
  QProcess p;
  QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
  e.remove("DELTAFIN_NO_SKIPS");
  e.remove("DELTAFIN_REQUIRE_GPU");
  for (const auto& [k, v] : env) e.insert(k, v);
  p.setProcessEnvironment(e);
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(QString::fromStdString(test::bin_dir() + "/" + name), {});
  Outcome o;
  if (!p.waitForStarted(10000) || !p.waitForFinished(600000)) {
    o.output = name + " did not start or finish";
    return o;
  }
  o.output = p.readAll().toStdString();
  o.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return o;
}

const std::pair<QString, QString> kNoNodeModules{"DELTAFIN_NODE_MODULES", "/nonexistent/node_modules"};

}  // namespace

class TestHarness : public QObject {
  Q_OBJECT

 private slots:
  void error_accumulators_keep_nan() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float a[3] = {1.f, nan, 3.f}, b[3] = {1.f, 2.f, 3.5f};
    QVERIFY(std::isnan(test::max_abs_diff(a, b, 3)));
    QVERIFY(std::isnan(test::max_abs_diff(b, a, 3)));
    QVERIFY(std::isnan(test::rel_l2(a, b, 3)));
    QCOMPARE(test::max_abs_diff(b, b, 3), 0.0);
    double worst = 0;
    for (double e : {0.5, double(nan), 2.0, 0.25}) worst = test::worst_of(worst, e);
    QVERIFY(std::isnan(worst));
    worst = 0;
    for (double e : {0.5, 2.0, 0.25}) worst = test::worst_of(worst, e);
    QCOMPARE(worst, 2.0);
  }

  void bit_equality_is_exact() {
    QVERIFY(test::same_bits(1.5f, 1.5f));
    QVERIFY(!test::same_bits(1.5f, std::nextafter(1.5f, 2.f)));
    QVERIFY(!test::same_bits(0.f, -0.f));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    QVERIFY(test::same_bits(nan, nan));
  }

  void missing_npm_package_skips_locally_and_fails_in_ci() {
    const Outcome local = run_test_program("test_qwen3_tokenizer", {kNoNodeModules});
    QVERIFY2(local.code == 0, local.output.c_str());
    QVERIFY2(local.output.find("SKIP   : ") != std::string::npos, local.output.c_str());
    QVERIFY2(local.output.find("npm ci --prefix tests/node") != std::string::npos, local.output.c_str());
    const Outcome ci = run_test_program("test_qwen3_tokenizer", {kNoNodeModules, {"DELTAFIN_NO_SKIPS", "1"}});
    QVERIFY2(ci.code != 0, ci.output.c_str());
    QVERIFY2(ci.output.find("SKIP   : ") == std::string::npos, ci.output.c_str());
    QVERIFY2(ci.output.find("FAIL!  : ") != std::string::npos, ci.output.c_str());
    QVERIFY2(ci.output.find("DELTAFIN_NO_SKIPS=1") != std::string::npos, ci.output.c_str());
  }

  void missing_gpu_fails_when_required() {
    const Outcome plain = run_test_program("test_qwen3_gpu", {});
    QVERIFY2(plain.code == 0, plain.output.c_str());
    const bool skipped = plain.output.find("SKIP   : ") != std::string::npos;
    qInfo("this machine's GPU tests %s", skipped ? "skip (no usable GPU)" : "ran on a GPU");
    const Outcome required = run_test_program("test_qwen3_gpu", {{"DELTAFIN_REQUIRE_GPU", "1"}});
    if (skipped) {
      QVERIFY2(required.code != 0, required.output.c_str());
      QVERIFY2(required.output.find("DELTAFIN_REQUIRE_GPU=1") != std::string::npos, required.output.c_str());
    } else {
      QVERIFY2(required.code == 0, required.output.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestHarness)
#include "test_harness.moc"
