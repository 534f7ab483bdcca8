// Qt Test wrapper over cuda_checks: each kernel against the CPU reference and for batch
// invariance. Skips, saying why, on machines without a usable NVIDIA GPU (CI builds this with nvcc
// but has no GPU).
#include <QtTest/QtTest>

#include "cuda/lab/expert_mlp.h"
#include "cuda_checks.h"
#include "gpu_test_support.h"

class TstCudaKernels : public QObject {
  Q_OBJECT

 private:
  uint64_t seed_ = 0;

  void verify(const std::vector<deltafin::cuda::check::Result>& results) {
    deltafin::cuda::test::verify_results(results, seed_);
  }

 private slots:
  void initTestCase() { seed_ = deltafin::cuda::test::test_seed(); }
  void bf16Gemm() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::bf16_gemm(seed_));
  }
  void rmsNorm() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::rmsnorm(seed_));
  }
  void k3Ops() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::k3_ops(seed_));
  }
  void expertMlp() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::expert_mlp(seed_, true));
  }
  void badShapesAreRejected() {
    REQUIRE_GPU();
    QVERIFY_THROWS_EXCEPTION(deltafin::cuda::CudaError, deltafin::cuda::ExpertMlp(100, 64, 4, 1));
    deltafin::cuda::DeviceBuffer w(64 * 12 * 2), x(12 * 4), y(64 * 4);
    QVERIFY_THROWS_EXCEPTION(deltafin::cuda::CudaError,
                             deltafin::cuda::bf16_gemm(w.data(), 64, 12, x.as<float>(), 12, 1, y.as<float>(), 64));
  }
};

QTEST_GUILESS_MAIN(TstCudaKernels)
#include "tst_cuda_kernels.moc"
