// The training script (tools/train/k3train.py) against the engine: a model the script exported is
// read by the engine's loader and gives the logits of the script's own float64 forward on the same
// files (BF16 widened, MXFP4 experts decoded), the engine's tokenizer and chat template give the
// ids the script trained on, and a DSpark drafter the script trained on that model's hidden
// states gives the script's block logits and drafts in the engine's DSpark proposer.
//
// The fixtures (tests/fixtures/k3-trained-tiny, dspark-trained-tiny) hold the script's output, so the engine side is
// checked everywhere; trainExportRoundTrip runs the script itself (train a few steps, export,
// forward) and needs python3 with PyTorch: without it the function skips and says so, and
// DELTAFIN_REQUIRE_TORCH=1 turns that skip into a failure.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "drafts/dspark_model.h"
#include "drafts/dspark_proposer.h"
#include "runtime/decode_session.h"
#include "runtime/k3_model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "support/test_support.h"

using namespace deltafin;

namespace {

bool torch_required() {
  const char* v = std::getenv("DELTAFIN_REQUIRE_TORCH");
  return v && std::string(v) == "1";
}

// The first interpreter that imports torch: $DELTAFIN_TRAIN_PYTHON, python3 on PATH, /usr/bin/python3.
std::string python_with_torch(std::string& tried) {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("DELTAFIN_TRAIN_PYTHON")) candidates.emplace_back(p);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const auto& py : candidates) {
    const auto r = test::run_process({py, "-c", "import torch"}, 60000);
    if (r.code == 0) return py;
    tried += (tried.empty() ? "" : ", ") + py;
  }
  return {};
}

}  // namespace

class TestTrainExport : public QObject {
  Q_OBJECT

  // Engine logits and layer streams for every prompt of `golden` (written by `k3train.py logits`)
  // against the script's, within the golden tolerance of tests/fixtures/k3-tiny/golden.json.
  void compareLogits(const std::string& model_dir, const std::string& golden_path) {
    auto model = K3Model::load(model_dir);
    const auto golden = test::load_tensors(golden_path);
    const auto meta = nlohmann::json::parse(test::read_file(golden_path + ".json"));
    const int V = model->config().vocab, H = model->config().hidden, L = model->config().layers;
    QVERIFY(!meta["prompts"].empty());
    for (const auto& p : meta["prompts"]) {
      const std::string P = "prompt." + std::to_string(p["index"].get<int>()) + ".";
      const auto ids64 = golden.i64(P + "ids");
      const std::vector<int32_t> ids(ids64.begin(), ids64.end());
      const int T = int(ids.size());
      K3Session s(*model);
      ForwardTrace tr;
      tr.layer_out = true;
      PassOptions o;
      o.trace = &tr;
      std::vector<float> logits;
      s.stage(ids, logits, o);
      s.commit(T);
      const auto want = golden.f32(P + "logits");
      QCOMPARE(logits.size(), want.size());
      const double rel = test::rel_l2(logits.data(), want.data(), want.size());
      const double mad = test::max_abs_diff(logits.data(), want.data(), want.size());
      qInfo("%s (T=%d): logits rel_l2 %.3g, max abs %.3g", P.c_str(), T, rel, mad);
      QVERIFY2(rel <= 5e-4, qPrintable(QString::number(rel)));
      QVERIFY2(mad <= 5e-3, qPrintable(QString::number(mad)));
      int agree = 0, clear = 0;
      for (int t = 0; t < T; ++t) {
        const float* g = &want[size_t(t) * V];
        std::vector<float> row(g, g + V);
        std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
        if (row[0] - row[1] <= 2e-3f) continue;
        ++clear;
        const float* e = &logits[size_t(t) * V];
        agree += (std::max_element(e, e + V) - e) == (std::max_element(g, g + V) - g);
      }
      QCOMPARE(agree, clear);
      const auto layers = golden.f32(P + "layer_out");
      QCOMPARE(int(tr.layers.size()), L);
      double worst = 0;
      for (int l = 0; l < L; ++l)
        worst = test::worst_of(worst, test::rel_l2(tr.layers[l].data(), &layers[size_t(l) * T * H], size_t(T) * H));
      qInfo("%s: argmax agrees at %d of %d clear positions, worst layer stream rel_l2 %.3g", P.c_str(), agree, clear,
            worst);
      QVERIFY2(worst <= 5e-4, qPrintable(QString::number(worst)));
    }
  }

  // The engine's DSpark proposer, fed the engine's own taps, against `k3train.py dspark-logits`.
  void compareDrafter(const std::string& model_dir, const std::string& draft_dir, const std::string& golden_path) {
    auto k3 = K3Model::load(model_dir);
    auto ds = DSparkModel::load(draft_dir, *k3);
    const auto golden = test::load_tensors(golden_path);
    const auto meta = nlohmann::json::parse(test::read_file(golden_path + ".json"));
    const int V = ds->config().vocab, T = ds->config().block_size, H = k3->config().hidden;
    QVERIFY(!meta["cases"].empty());
    for (const auto& cs : meta["cases"]) {
      const std::string p = "case." + std::to_string(cs["index"].get<int>()) + ".";
      const auto ctx64 = golden.i64(p + "context_ids");
      const auto anchor = golden.i64(p + "anchor");
      const std::vector<int32_t> ctx(ctx64.begin(), ctx64.end());
      K3Session s(*k3);
      ForwardTrace tr;
      tr.layer_out = true;
      PassOptions po;
      po.trace = &tr;
      std::vector<float> logits;
      s.stage(ctx, logits, po);
      s.commit(int(ctx.size()));
      DSparkProposer prop(*ds);
      std::vector<const float*> taps;
      for (int l : ds->config().target_layer_ids) taps.push_back(tr.layers[size_t(l)].data());
      prop.add_context(int(ctx.size()), taps);
      QCOMPARE(prop.context_length(), anchor[1]);
      std::vector<float> base;
      prop.block_logits(int32_t(anchor[0]), base);
      const auto want = golden.f32(p + "base_logits");
      QCOMPARE(base.size(), size_t(T) * V);
      const double rel = test::rel_l2(base.data(), want.data(), want.size());
      qInfo("%s (context %zu, hidden %d): base logits rel_l2 %.3g", p.c_str(), ctx.size(), H, rel);
      QVERIFY2(rel <= 1e-4, qPrintable(QString::number(rel)));
      std::vector<int32_t> drafts;
      prop.markov(int32_t(anchor[0]), base, drafts);
      const auto gd = golden.i64(p + "drafts");
      const auto margins = golden.f32(p + "margins");
      // Each draft conditions the next: compare up to the first unclear step.
      for (int k = 0; k < T && margins[size_t(k)] > 1e-3f; ++k) QCOMPARE(int64_t(drafts[size_t(k)]), gd[size_t(k)]);
    }
  }

  // The engine's tokenizer and chat template give the ids the script trained on.
  void compareTokens(const std::string& model_dir, const std::string& golden_path) {
    const auto tok = load_tokenizer(model_dir);
    const auto golden = test::load_tensors(golden_path);
    const auto meta = nlohmann::json::parse(test::read_file(golden_path + ".json"));
    int checked = 0;
    for (const auto& p : meta["prompts"]) {
      const auto want = golden.i64("prompt." + std::to_string(p["index"].get<int>()) + ".ids");
      std::vector<int32_t> ids;
      if (p["kind"] == "text") {
        ids.push_back(tok->require_special_id("[BOS]"));
        const auto text = tok->encode(p["text"].get<std::string>());
        ids.insert(ids.end(), text.begin(), text.end());
      } else if (p["kind"] == "chat") {
        const std::vector<ChatMessage> chat = {ChatMessage("user", p["user"].get<std::string>())};
        ChatOptions opt;
        opt.thinking = p["thinking"].get<bool>();
        ids = render_chat(*tok, chat, opt);
      } else {
        continue;
      }
      QCOMPARE(std::vector<int64_t>(ids.begin(), ids.end()), want);
      ++checked;
    }
    QVERIFY(checked >= 2);
  }

 private slots:
  void initTestCase() { qputenv("PYTHONDONTWRITEBYTECODE", "1"); }

  void fixtureLogitsMatchScript() {
    const std::string dir = test::fixtures_dir() + "/k3-trained-tiny";
    compareLogits(dir, dir + "/golden.safetensors");
  }

  void fixtureTokensMatchScript() {
    const std::string dir = test::fixtures_dir() + "/k3-trained-tiny";
    compareTokens(dir, dir + "/golden.safetensors");
  }

  void fixtureDrafterMatchesScript() {
    compareDrafter(test::fixtures_dir() + "/k3-trained-tiny", test::fixtures_dir() + "/dspark-trained-tiny",
                   test::fixtures_dir() + "/dspark-trained-tiny/golden.safetensors");
  }

  void trainExportRoundTrip() {
    std::string tried;
    const std::string py = python_with_torch(tried);
    if (py.empty())
      DELTAFIN_SKIP_OR_FAIL_IF(torch_required(), "DELTAFIN_REQUIRE_TORCH",
                               "no python3 with PyTorch (tried " + tried +
                                   "): the training script was not run; the committed fixture still checks the "
                                   "engine side (apt-get install python3-torch, or set DELTAFIN_TRAIN_PYTHON)");
    const std::string script = test::source_dir() + "/tools/train/k3train.py";
    const std::string tmp = test::temp_dir("train-export");
    auto run = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {py, script});
      const auto r = test::run_process(args, 540000);
      if (r.code != 0) qWarning("%s\n%s", r.out.c_str(), r.err.c_str());
      return r.code;
    };
    QCOMPARE(run({"selftest"}), 0);
    // Any text will do: the check is that the engine reads what the script wrote.
    QCOMPARE(run({"all", "--config", "test", "--seed", "7", "--threads", "1", "--text",
                  test::fixtures_dir() + "/README.md", "--work", tmp + "/work", "--out", tmp + "/model"}),
             0);
    QCOMPARE(
        run({"logits", "--model", tmp + "/model", "--prompt", "The golden fixtures are small checkpoints.", "--prompt",
             "Hello", "--chat", "What is a \"tiny\" model & why?", "--out", tmp + "/golden.safetensors"}),
        0);
    compareLogits(tmp + "/model", tmp + "/golden.safetensors");
    if (QTest::currentTestFailed()) return;
    compareTokens(tmp + "/model", tmp + "/golden.safetensors");
    if (QTest::currentTestFailed()) return;
    QCOMPARE(run({"dspark",
                  "--target",
                  tmp + "/model",
                  "--data",
                  tmp + "/work/data",
                  "--out",
                  tmp + "/draft",
                  "--steps",
                  "6",
                  "--batch",
                  "2",
                  "--seq",
                  "48",
                  "--anchors",
                  "3",
                  "--threads",
                  "1",
                  "--set",
                  "intermediate=96",
                  "--set",
                  "markov_rank=8"}),
             0);
    QCOMPARE(run({"dspark-logits", "--target", tmp + "/model", "--draft", tmp + "/draft", "--prompt",
                  "The golden fixtures are small checkpoints in the exact on-disk format.", "--out",
                  tmp + "/draft-golden.safetensors"}),
             0);
    compareDrafter(tmp + "/model", tmp + "/draft", tmp + "/draft-golden.safetensors");
  }
};

QTEST_GUILESS_MAIN(TestTrainExport)
#include "test_train_export.moc"
