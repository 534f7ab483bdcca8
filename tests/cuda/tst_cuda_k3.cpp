// Qt Test wrapper over cuda_k3_checks: the CUDA K3 forward against the k3-tiny goldens and the CPU
// session, batch invariance and state transactions. Skips, saying why, without a usable GPU (CI
// builds this with nvcc but has no GPU).
#include <QtTest/QtTest>

#include <random>

#include "cuda/cuda_kernels.h"
#include "cuda_k3_checks.h"
#include "support/test_support.h"

#define REQUIRE_GPU()                                                                                    \
  do {                                                                                                   \
    std::string why_;                                                                                    \
    if (!deltafin::cuda::device_available(&why_))                                                        \
      QSKIP(qPrintable(QString::fromStdString("needs an NVIDIA GPU with a working driver: " + why_))); \
  } while (0)

class TstCudaK3 : public QObject {
  Q_OBJECT
  uint64_t seed_ = 0;

  void verify(const std::vector<deltafin::cuda::check::Result>& results) {
    QVERIFY(!results.empty());
    for (const auto& r : results) {
      qInfo("%s %s: %s", r.ok ? "PASS" : "FAIL", r.name.c_str(), r.detail.c_str());
      QVERIFY2(r.ok, qPrintable(QString::fromStdString(r.name + ": " + r.detail + " (seed " + std::to_string(seed_) + ")")));
    }
  }

 private slots:
  void initTestCase() {
    seed_ = qEnvironmentVariableIsSet("DELTAFIN_TEST_SEED") ? qEnvironmentVariable("DELTAFIN_TEST_SEED").toULongLong()
                                                           : std::random_device{}();
    qInfo("seed %llu (set DELTAFIN_TEST_SEED to repeat)", static_cast<unsigned long long>(seed_));
  }
  void kernelsAgainstCpu() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_kernels(seed_));
  }
  void goldensAndCpuGreedy() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_goldens(deltafin::test::fixtures_dir() + "/k3-tiny"));
  }
  void batchInvarianceAndTransactions() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_transactions(deltafin::test::fixtures_dir() + "/k3-tiny", seed_));
  }
};

QTEST_GUILESS_MAIN(TstCudaK3)
#include "tst_cuda_k3.moc"
