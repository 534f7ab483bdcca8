#include "support/test_support.h"

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "base/error.h"

namespace deltafin::test {

std::string fixtures_dir() { return DELTAFIN_FIXTURES_DIR; }
std::string bin_dir() { return DELTAFIN_BIN_DIR; }
std::string build_dir() { return DELTAFIN_BUILD_DIR; }
std::string source_dir() { return DELTAFIN_SOURCE_DIR; }

std::string temp_dir(const std::string& tag) {
  static std::vector<std::unique_ptr<QTemporaryDir>> dirs;
  dirs.push_back(
      std::make_unique<QTemporaryDir>(QDir::tempPath() + "/deltafin-" + QString::fromStdString(tag) + "-XXXXXX"));
  return dirs.back()->path().toStdString();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

RunResult run_process(const std::vector<std::string>& argv, int timeout_ms) {
  QProcess p;
  QStringList args;
  for (size_t i = 1; i < argv.size(); ++i) args << QString::fromStdString(argv[i]);
  p.start(QString::fromStdString(argv.at(0)), args);
  RunResult r;
  if (!p.waitForStarted(10000)) {
    r.err = "failed to start " + argv[0];
    return r;
  }
  p.closeWriteChannel();
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
  }
  r.out = p.readAllStandardOutput().toStdString();
  r.err += p.readAllStandardError().toStdString();
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

namespace {
template <class T>
double rel_l2_of(const T* a, const T* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
}  // namespace

double rel_l2(const double* a, const double* b, size_t n) { return rel_l2_of(a, b, n); }
double rel_l2(const float* a, const float* b, size_t n) { return rel_l2_of(a, b, n); }

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = worst_of(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

static bool env_is_one(const char* name) { return qEnvironmentVariable(name) == "1"; }
bool skips_forbidden() { return env_is_one("DELTAFIN_NO_SKIPS"); }
bool gpu_required() { return env_is_one("DELTAFIN_REQUIRE_GPU"); }

std::string forbidden_skip_message(const std::string& reason, const char* variable) {
  return reason + " (a failure, not a skip: " + variable + "=1 says this run has everything it needs)";
}

}  // namespace deltafin::test
