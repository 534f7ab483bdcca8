// What the Qt wrappers over the Qt-free CUDA checks share: skipping without a GPU, the seed, and
// turning check results into test failures.
#pragma once
#include <QtTest/QtTest>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "cuda_checks.h"
#include "support/test_support.h"

// QSKIP returns from the function it is written in, so this has to be a macro. A skip unless
// DELTAFIN_REQUIRE_GPU=1 declares this machine has a GPU: then a failure.
#define REQUIRE_GPU()                                                                      \
  do {                                                                                     \
    std::string gpu_why_;                                                                  \
    if (!deltafin::cuda::device_available(&gpu_why_))                                      \
      DELTAFIN_SKIP_WITHOUT_GPU("needs an NVIDIA GPU with a working driver: " + gpu_why_); \
  } while (0)

namespace deltafin::cuda::test {

// A fresh seed per run unless DELTAFIN_TEST_SEED repeats one; printed either way.
inline uint64_t test_seed() {
  const uint64_t seed = qEnvironmentVariableIsSet("DELTAFIN_TEST_SEED")
                            ? qEnvironmentVariable("DELTAFIN_TEST_SEED").toULongLong()
                            : std::random_device{}();
  qInfo("seed %llu (set DELTAFIN_TEST_SEED to repeat)", static_cast<unsigned long long>(seed));
  return seed;
}

// Prints every result; fails on the first that did not pass. Returns false after a failure so the
// caller can stop (QVERIFY in a helper only returns from the helper).
inline bool verify_results(const std::vector<check::Result>& results, uint64_t seed) {
  if (results.empty()) {
    QTest::qFail("no check ran", __FILE__, __LINE__);
    return false;
  }
  for (const auto& r : results) {
    qInfo("%s %s: %s", r.ok ? "PASS" : "FAIL", r.name.c_str(), r.detail.c_str());
    if (!r.ok) {
      QTest::qFail(
          qPrintable(QString::fromStdString(r.name + ": " + r.detail + " (seed " + std::to_string(seed) + ")")),
          __FILE__, __LINE__);
      return false;
    }
  }
  return true;
}

}  // namespace deltafin::cuda::test
