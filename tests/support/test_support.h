#pragma once
#include <QtTest/QtTest>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "support/golden_tensors.h"
#include "support/worst_error.h"

namespace deltafin::test {

std::string fixtures_dir();  // shared/fixtures
std::string bin_dir();       // built executables
std::string build_dir();
std::string source_dir();
// A fresh empty directory under the system temp dir, removed when the process exits.
std::string temp_dir(const std::string& tag);
// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

// Runs a command, returns exit code; stdout and stderr captured.
struct RunResult {
  int code = -1;
  std::string out, err;
};
RunResult run_process(const std::vector<std::string>& argv, int timeout_ms = 120000);

// n draws of a standard normal distribution from rng (any standard random engine).
template <class Rng>
std::vector<float> random_floats(size_t n, Rng& rng) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A NaN anywhere in the inputs gives NaN, so `< tolerance` fails.
double rel_l2(const float* a, const float* b, size_t n);
double rel_l2(const double* a, const double* b, size_t n);
double max_abs_diff(const float* a, const float* b, size_t n);

// Skips a test run must not take where the set-up is known to be complete. A CI run
// (`installers/bootstrap.sh test` with CI=true sets DELTAFIN_NO_SKIPS=1) installs node and the npm
// packages or fails, so a test that finds them missing fails there instead of skipping.
// DELTAFIN_REQUIRE_GPU=1 (`installers/bootstrap.sh test --require-gpu`) does the same for tests
// that need a GPU, on a machine that should have one.
bool skips_forbidden();
bool gpu_required();
std::string forbidden_skip_message(const std::string& reason, const char* variable);

}  // namespace deltafin::test

// QSKIP and QFAIL return from the function they are written in, so these are macros.
#define DELTAFIN_SKIP_OR_FAIL_IF(forbidden, variable, reason)                                              \
  do {                                                                                                     \
    const std::string deltafin_skip_reason_ = (reason);                                                    \
    if (forbidden) QFAIL(deltafin::test::forbidden_skip_message(deltafin_skip_reason_, variable).c_str()); \
    QSKIP(deltafin_skip_reason_.c_str());                                                                  \
  } while (0)
// A missing test-only tool (node, an npm package): skip locally, fail in CI.
#define DELTAFIN_SKIP_UNLESS_CI(reason) \
  DELTAFIN_SKIP_OR_FAIL_IF(deltafin::test::skips_forbidden(), "DELTAFIN_NO_SKIPS", reason)
// No usable GPU: skip, unless the machine is declared to have one.
#define DELTAFIN_SKIP_WITHOUT_GPU(reason) \
  DELTAFIN_SKIP_OR_FAIL_IF(deltafin::test::gpu_required(), "DELTAFIN_REQUIRE_GPU", reason)
