// The chunkwise KDA form equals the recurrent form (outputs and final state).
#include <cmath>
#include <random>

#include "runtime/k3_model.h"
#include "runtime/kda_core.h"
#include "support/test_support.h"

using namespace deltafin;

class TestKdaChunked : public QObject {
  Q_OBJECT
 private slots:
  void chunkedEqualsRecurrent_data() {
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("dk");
    QTest::addColumn<int>("dv");
    QTest::addColumn<int>("T");
    QTest::addColumn<int>("chunk");
    QTest::newRow("one step") << 2 << 16 << 16 << 1 << 16;
    QTest::newRow("ragged chunk") << 3 << 16 << 16 << 37 << 16;
    QTest::newRow("dk != dv") << 2 << 8 << 12 << 50 << 8;
    QTest::newRow("K3 head, 2 chunks") << 1 << 128 << 128 << 128 << 64;
    QTest::newRow("long") << 2 << 32 << 32 << 300 << 64;
  }

  void chunkedEqualsRecurrent() {
    QFETCH(int, heads);
    QFETCH(int, dk);
    QFETCH(int, dv);
    QFETCH(int, T);
    QFETCH(int, chunk);
    std::mt19937 rng(heads * 1000 + T);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(-5.f, 0.f), bd(0.f, 1.f);
    const KdaShape s{heads, dk, dv};
    const size_t qk = size_t(T) * heads * dk, vv = size_t(T) * heads * dv;
    std::vector<double> q(qk), k(qk), la(qk), v(vv), beta(size_t(T) * heads);
    auto l2 = [&](std::vector<double>& x) {
      for (size_t r = 0; r < x.size(); r += dk) {
        double ss = 0;
        for (int i = 0; i < dk; ++i) ss += x[r + i] * x[r + i];
        for (int i = 0; i < dk; ++i) x[r + i] /= std::sqrt(ss);
      }
    };
    for (auto& x : q) x = nd(rng);
    for (auto& x : k) x = nd(rng);
    l2(q);
    l2(k);
    for (auto& x : v) x = nd(rng);
    for (auto& x : la) x = ud(rng);
    for (auto& x : beta) x = bd(rng);
    std::vector<double> S1(size_t(heads) * dk * dv), S2;
    for (auto& x : S1) x = 0.1f * nd(rng);
    S2 = S1;
    std::vector<double> o1(vv), o2(vv);
    kda_recurrent(s, S1.data(), T, q.data(), k.data(), v.data(), la.data(), beta.data(), o1.data());
    kda_chunked(s, S2.data(), T, q.data(), k.data(), v.data(), la.data(), beta.data(), o2.data(), chunk);
    const double ro = test::rel_l2(o2.data(), o1.data(), vv), rs = test::rel_l2(S2.data(), S1.data(), S1.size());
    qInfo("outputs rel_l2 %.3g, state rel_l2 %.3g", ro, rs);
    // Both forms in fp64: they differ only by the rounding of two summation orders.
    QVERIFY2(ro < 1e-11, qPrintable(QString::number(ro)));
    QVERIFY2(rs < 1e-11, qPrintable(QString::number(rs)));
  }

  void chunkedPrefillMatchesGolden() {
    auto m = K3Model::load(test::fixtures_dir() + "/k3-tiny");
    auto g = test::load_tensors(test::fixtures_dir() + "/k3-tiny/golden.safetensors");
    auto p = g.i64("prompt.3.ids");
    std::vector<int32_t> ids(p.begin(), p.end());
    std::vector<float> step, chunked;
    K3Session a(*m), b(*m);
    a.stage(ids, step);
    PassOptions o;
    o.chunked_kda = true;
    b.stage(ids, chunked, o);
    const double r = test::rel_l2(chunked.data(), step.data(), step.size());
    const auto want = g.f32("prompt.3.logits");
    const double rg = test::rel_l2(chunked.data(), want.data(), want.size());
    qInfo("chunked vs step logits rel_l2 %.3g; chunked vs golden %.3g", r, rg);
    QVERIFY(r < 1e-7);  // fp64 forms; the logits differ at most by their final fp32 rounding
    QVERIFY(rg < 5e-4);
  }
};

QTEST_GUILESS_MAIN(TestKdaChunked)
#include "test_kda_chunked.moc"
