// k3-tiny against the outputs of Moonshot's own modeling code (shared/fixtures/k3-tiny).
#include <cmath>
#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>

#include "cpu/gemm.h"
#include "runtime/generate.h"
#include "support/test_support.h"

using namespace deltafin;

class TestK3Golden : public QObject {
  Q_OBJECT
  std::unique_ptr<K3Model> model_;
  test::LoadedTensors golden_;
  nlohmann::json meta_;

 private slots:
  void initTestCase() {
    const std::string dir = test::fixtures_dir() + "/k3-tiny";
    model_ = K3Model::load(dir);
    golden_ = test::load_tensors(dir + "/golden.safetensors");
    meta_ = nlohmann::json::parse(test::read_file(dir + "/golden.json"));
    qInfo("CPU kernels: %s", kernels::active().name);
  }

  void logitsLayersAndRouting_data() {
    QTest::addColumn<int>("prompt");
    for (const auto& p : meta_["prompts"])
      QTest::newRow(p["text"].get<std::string>().substr(0, 20).c_str()) << p["index"].get<int>();
  }

  void logitsLayersAndRouting() {
    QFETCH(int, prompt);
    const std::string P = "prompt." + std::to_string(prompt) + ".";
    auto ids64 = golden_.i64(P + "ids");
    std::vector<int32_t> ids(ids64.begin(), ids64.end());
    const int T = int(ids.size()), V = model_->config().vocab, H = model_->config().hidden;
    K3Session s(*model_);
    ForwardTrace tr;
    tr.layer_out = tr.routing = true;
    PassOptions o;
    o.trace = &tr;
    std::vector<float> logits;
    s.stage(ids, logits, o);
    s.commit(T);

    auto want = golden_.f32(P + "logits");
    QCOMPARE(logits.size(), want.size());
    const double rel = test::rel_l2(logits.data(), want.data(), want.size());
    const double mad = test::max_abs_diff(logits.data(), want.data(), want.size());
    qInfo("prompt %d (T=%d): logits rel_l2 %.3g, max abs %.3g", prompt, T, rel, mad);
    QVERIFY2(rel <= 5e-4, qPrintable(QString::number(rel)));
    QVERIFY2(mad <= 5e-3, qPrintable(QString::number(mad)));
    // Argmax agrees wherever the golden top-2 margin is clear.
    for (int t = 0; t < T; ++t) {
      const float* g = &want[size_t(t) * V];
      std::vector<float> row(g, g + V);
      std::sort(row.begin(), row.end(), std::greater<float>());
      if (row[0] - row[1] > 2e-3f)
        QCOMPARE(std::max_element(&logits[size_t(t) * V], &logits[size_t(t + 1) * V]) - &logits[size_t(t) * V],
                 std::max_element(g, g + V) - g);
    }

    auto layers = golden_.f32(P + "layer_out");
    QCOMPARE(tr.layers.size(), size_t(model_->config().layers));
    double worst = 0;
    for (size_t l = 0; l < tr.layers.size(); ++l) {
      const double r = test::rel_l2(tr.layers[l].data(), &layers[l * T * H], size_t(T) * H);
      worst = test::worst_of(worst, r);
      QVERIFY2(r <= 5e-4, qPrintable(QString("layer %1 rel %2").arg(l).arg(r)));
    }
    qInfo("prompt %d: worst layer stream rel_l2 %.3g", prompt, worst);

    auto ids_want = golden_.i64(P + "topk_ids");
    auto w_want = golden_.f32(P + "topk_weights");
    const int moe_layers = model_->config().moe_layers(), k = model_->config().top_k;
    QCOMPARE(int(tr.topk_ids.size()), moe_layers);
    double wmax = 0;
    for (int l = 0; l < moe_layers; ++l)
      for (int i = 0; i < T * k; ++i) {
        QCOMPARE(int64_t(tr.topk_ids[l][i]), ids_want[size_t(l) * T * k + i]);
        wmax = test::worst_of(wmax, std::fabs(double(tr.topk_weights[l][i]) - w_want[size_t(l) * T * k + i]));
      }
    qInfo("prompt %d: routed experts identical at every position, max weight diff %.3g", prompt, wmax);
    QVERIFY(wmax <= 1e-4);
  }

  void greedyThroughIncrementalDecode_data() {
    QTest::addColumn<int>("index");
    for (const auto& g : meta_["greedy"])
      QTest::newRow(("greedy " + std::to_string(g["index"].get<int>())).c_str()) << g["index"].get<int>();
  }

  void greedyThroughIncrementalDecode() {
    QFETCH(int, index);
    const std::string G = "greedy." + std::to_string(index) + ".";
    auto p64 = golden_.i64(G + "prompt_ids");
    auto want = golden_.i64(G + "ids");
    auto margins = golden_.f32(G + "margins");
    std::vector<int32_t> prompt(p64.begin(), p64.end());
    K3Session s(*model_);
    GenerateOptions g;
    g.max_new = int(want.size());
    auto r = generate(s, prompt, g);
    QCOMPARE(r.ids.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      if (margins[i] <= 2e-3f) break;  // past an unclear step the continuation may legitimately differ
      QCOMPARE(int64_t(r.ids[i]), want[i]);
    }
    QCOMPARE(s.n_past(), int64_t(prompt.size() + want.size() - 1));
    // Every decode step after the prefill is a one-row pass, timed by phase; the phases lie within
    // the passes' total.
    const DecodePhases& ph = s.decode_phases();
    const bool one_row_prefill_chunk = g.prefill_chunk > 0 && int(prompt.size()) % g.prefill_chunk == 1;
    QCOMPARE(ph.passes, int64_t(want.size() - 1) + (one_row_prefill_chunk ? 1 : 0));
    QVERIFY(ph.attention > 0 && ph.mlp > 0 && ph.head > 0);
    QVERIFY(ph.attention + ph.mlp + ph.head <= ph.total);
  }
};

QTEST_GUILESS_MAIN(TestK3Golden)
#include "test_k3_golden.moc"
