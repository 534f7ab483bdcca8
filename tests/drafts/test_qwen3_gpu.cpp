// The Qwen3 drafter on the GPU: qwen3-tiny goldens and GPU vs CPU logits (qwen3_gpu_checks.cpp),
// skipped with the reason when this build or machine has no usable GPU; and, everywhere, that the
// backend choice falls back to the CPU with a stated reason and the proposer drafts through it.
#include "base/error.h"
#include "qwen3_gpu_checks.h"
#include "drafts/qwen3_model.h"
#include "drafts/qwen3_proposer.h"
#include "support/test_support.h"

using namespace deltafin;

class TestQwen3Gpu : public QObject {
  Q_OBJECT
  std::string dir_, why_;

 private slots:
  void initTestCase() {
    dir_ = test::fixtures_dir() + "/qwen3-tiny";
    why_ = qwen3_checks::gpu_unavailable_reason(dir_);
  }

  void backendChoiceSaysWhere() {
    auto m = Qwen3Model::load(dir_);
    std::string note;
    auto b = make_qwen3_backend(*m, Qwen3Device::Auto, &note);
    QVERIFY(b);
    if (why_.empty()) {
      QCOMPARE(std::string(b->device()), std::string("cuda"));
      QCOMPARE(note, std::string("cuda"));
    } else {
      QCOMPARE(std::string(b->device()), std::string("cpu"));
      QVERIFY2(note.find(why_) != std::string::npos, note.c_str());
    }
    auto c = make_qwen3_backend(*m, Qwen3Device::Cpu, &note);
    QCOMPARE(std::string(c->device()), std::string("cpu"));
    QCOMPARE(note, std::string("cpu"));
    QCOMPARE(c->host_model(), m.get());
    QVERIFY(qwen3_cuda_built() || !why_.empty());
    QVERIFY_THROWS_EXCEPTION(deltafin::Error, parse_qwen3_device("gpu"));
    QCOMPARE(parse_qwen3_device("cuda"), Qwen3Device::Cuda);
  }

  // A backend's sessions give the same logits as Qwen3Session, whatever the device.
  void backendSessionsMatchTheCpuForward() {
    auto m = Qwen3Model::load(dir_);
    auto b = make_qwen3_backend(*m, Qwen3Device::Auto, nullptr);
    const std::vector<int32_t> ids = {785, 6722, 315, 9625, 374, 1, 151000};
    auto s = b->session();
    Qwen3Session ref(*m);
    std::vector<float> a, c;
    s->forward(ids, a, true);
    ref.forward(ids, c, true);
    QCOMPARE(a.size(), c.size());
    QVERIFY(test::rel_l2(a.data(), c.data(), a.size()) < 1e-5);
    QCOMPARE(s->n_past(), int64_t(ids.size()));
    const int32_t one[1] = {42};
    std::vector<float> d;
    ref.forward(one, d);
    QCOMPARE(s->forward_greedy(one), int32_t(argmax(d.data(), int64_t(d.size()))));
    QVERIFY_THROWS_EXCEPTION(deltafin::Error, s->truncate(100));
    const int32_t bad[1] = {-3};
    QVERIFY_THROWS_EXCEPTION(deltafin::Error, s->forward(bad, a));
  }

  void goldensOnGpu() {
    if (!why_.empty()) DELTAFIN_SKIP_WITHOUT_GPU("no GPU backend: " + why_);
    const auto o = qwen3_checks::golden(dir_);
    qInfo("%s", o.detail.c_str());
    QVERIFY2(o.ok, o.detail.c_str());
  }

  void gpuMatchesCpu() {
    if (!why_.empty()) DELTAFIN_SKIP_WITHOUT_GPU("no GPU backend: " + why_);
    for (uint64_t seed : {1, 2}) {
      const auto o = qwen3_checks::gpu_matches_cpu(dir_, seed);
      qInfo("%s", o.detail.c_str());
      QVERIFY2(o.ok, o.detail.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestQwen3Gpu)
#include "test_qwen3_gpu.moc"
