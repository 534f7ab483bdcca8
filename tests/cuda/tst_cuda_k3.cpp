// Qt Test wrapper over cuda_k3_checks: the CUDA K3 forward against the k3-tiny goldens and the CPU
// session, batch invariance and state transactions. Skips, saying why, without a usable GPU (CI
// builds this with nvcc but has no GPU).
#include <QtTest/QtTest>

#include "cuda_k3_checks.h"
#include "gpu_test_support.h"
#include "support/test_support.h"

class TstCudaK3 : public QObject {
  Q_OBJECT
  uint64_t seed_ = 0;

  void verify(const std::vector<deltafin::cuda::check::Result>& results) {
    deltafin::cuda::test::verify_results(results, seed_);
  }

 private slots:
  void initTestCase() { seed_ = deltafin::cuda::test::test_seed(); }
  void kernelsAgainstCpu() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_kernels(seed_));
  }
  void goldensAndCpuGreedy() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_goldens(deltafin::test::fixtures_dir() + "/k3-tiny"));
  }
  void splitBetweenGpuAndCpu() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_split(deltafin::test::fixtures_dir() + "/k3-tiny"));
  }
  void acrossTwoGpus() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_multi(deltafin::test::fixtures_dir() + "/k3-tiny"));
  }
  void batchInvarianceAndTransactions() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_transactions(deltafin::test::fixtures_dir() + "/k3-tiny", seed_));
  }
};

QTEST_GUILESS_MAIN(TstCudaK3)
#include "tst_cuda_k3.moc"
