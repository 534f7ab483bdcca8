// Qt Test wrapper over cuda_checks: each kernel against the CPU reference and for batch
// invariance. Skips, saying why, on machines without a usable NVIDIA GPU (CI builds this with nvcc
// but has no GPU).
#include <QtTest/QtTest>

#include <random>

#include "cuda/cuda_kernels.h"
#include "cuda_checks.h"

// QSKIP returns from the function it is written in, so this has to be a macro.
#define REQUIRE_GPU()                                                                                      \
  do {                                                                                                     \
    std::string why_;                                                                                      \
    if (!deltafin::cuda::device_available(&why_))                                                          \
      QSKIP(qPrintable(QString::fromStdString("needs an NVIDIA GPU with a working driver: " + why_)));   \
  } while (0)

class TstCudaKernels : public QObject {
  Q_OBJECT

 private:
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
  void bf16Gemm() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::bf16_gemm(seed_));
  }
  void rmsNorm() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::rmsnorm(seed_));
  }
  void situ() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::situ(seed_));
  }
  void routerTopk() {
    REQUIRE_GPU();
    verify(deltafin::cuda::check::router_topk(seed_));
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
