// The verifier's contract: with any drafter (oracle, corrupted oracle, random,
// n-gram, one that fails) generate() prints exactly the ids of plain decoding,
// greedy and seeded sampling alike, on k3-tiny and on synthesized K3 models,
// and leaves the session in exactly the state plain decoding leaves.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>

#include "base/thread_pool.h"
#include "runtime/generate.h"
#include "drafts/ngram_proposer.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"
#include "test_drafters.h"

using namespace deltafin;

namespace {

constexpr int kPrompts = 50;

// 50 prompts: random ids of varied length, and repetitive ones where the n-gram drafter hits.
std::vector<std::vector<int32_t>> make_prompts(int32_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int32_t>> out;
  for (int p = 0; p < kPrompts; ++p) {
    std::vector<int32_t> ids;
    const int len = 1 + static_cast<int>(rng() % 24);
    if (p % 3 == 2) {
      const int period = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < period; ++i) ids.push_back(static_cast<int32_t>(rng() % vocab));
      while (static_cast<int>(ids.size()) < len + period) ids.push_back(ids[ids.size() - period]);
    } else {
      for (int i = 0; i < len; ++i) ids.push_back(static_cast<int32_t>(rng() % vocab));
    }
    out.push_back(ids);
  }
  return out;
}

SamplingParams sampled(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.95f;
  p.top_k = 50;
  p.seed = seed;
  return p;
}

QString ids_str(const std::vector<int32_t>& v) {
  QStringList l;
  for (int32_t x : v) l << QString::number(x);
  return l.join(",");
}

// A CPU session that takes at most `rows` rows per pass, as the GPU session does (16 there):
// generate() must cut prefill chunks and verify passes to it and print the same ids.
class RowLimitedSession : public K3Session {
 public:
  RowLimitedSession(const K3Model& m, int rows) : K3Session(m), rows_(rows) {}
  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) override {
    widest_ = std::max(widest_, static_cast<int>(ids.size()));
    if (static_cast<int>(ids.size()) > rows_) throw std::runtime_error("a pass of more rows than the session takes");
    K3Session::stage(ids, logits, opts);
  }
  int max_rows() const override { return rows_; }
  int widest() const { return widest_; }

 private:
  int rows_;
  int widest_ = 0;
};

}  // namespace

class TestVerifier : public QObject {
  Q_OBJECT
  std::vector<std::unique_ptr<K3Model>> models_;
  std::vector<std::string> names_;

  GenerateResult plain(const K3Model& m, const std::vector<int32_t>& prompt, const GenerateOptions& g) {
    K3Session s(m);
    return generate(s, prompt, g);
  }

  // Runs every drafter over every prompt with `g`'s sampling and compares with plain decoding.
  void check_model(const K3Model& m, const std::string& name, bool sampling) {
    const int32_t V = m.config().vocab;
    const auto prompts = make_prompts(std::min<int32_t>(V, 600), sampling ? 11 : 7);
    int proposed = 0, accepted = 0, oracle_proposed = 0, oracle_accepted = 0;
    for (int p = 0; p < kPrompts; ++p) {
      GenerateOptions g;
      g.max_new = 6 + p % 11;
      if (sampling) g.sampling = sampled(1000 + p);
      const auto ref = plain(m, prompts[p], g);
      QCOMPARE(int(ref.ids.size()), g.max_new);
      std::vector<std::unique_ptr<DraftProposer>> drafters;
      drafters.push_back(std::make_unique<test::OracleProposer>(prompts[p].size(), ref.ids));
      drafters.push_back(std::make_unique<test::OracleProposer>(prompts[p].size(), ref.ids, 2, p));
      drafters.push_back(std::make_unique<test::RandomProposer>(V, p));
      drafters.push_back(std::make_unique<NgramProposer>());
      for (auto& d : drafters) {
        {
          // Guess lengths 1, 3 and 7 spread over the prompts.
          const int kmax = (p % 3 == 0) ? 1 : (p % 3 == 1) ? 3 : 7;
          GenerateOptions gd = g;
          gd.drafter = d.get();
          gd.draft_max = kmax;
          gd.draft_always = true;
          K3Session s(m);
          const auto got = generate(s, prompts[p], gd);
          QVERIFY2(got.ids == ref.ids,
                   qPrintable(QString("%1 %2 prompt %3 drafter %4 k %5: %6 vs plain %7")
                                  .arg(QString::fromStdString(name), sampling ? "sampled" : "greedy")
                                  .arg(p)
                                  .arg(QString::fromStdString(d->name()))
                                  .arg(kmax)
                                  .arg(ids_str(got.ids), ids_str(ref.ids))));
          QVERIFY(got.stats.draft_fallback.empty());
          QVERIFY(got.stats.accepted <= got.stats.proposed);
          proposed += got.stats.proposed;
          accepted += got.stats.accepted;
          if (d->name() == "oracle") {
            oracle_proposed += got.stats.proposed;
            oracle_accepted += got.stats.accepted;
            // Every pass but the last emits kmax + 1 tokens.
            QVERIFY(got.stats.verify_passes + got.stats.plain_passes <= (g.max_new - 1 + kmax) / (kmax + 1) + 1);
          }
        }
      }
    }
    QCOMPARE(oracle_accepted, oracle_proposed);
    QVERIFY(accepted < proposed);  // random and corrupted guesses were rejected somewhere
    qInfo("%s %s: %d guesses, %d accepted", name.c_str(), sampling ? "sampled" : "greedy", proposed, accepted);
  }

 private slots:
  void initTestCase() {
    // Tiny models: the pool's hand-offs would cost more than the arithmetic.
    ThreadPool::set_global_threads(1);
    models_.push_back(K3Model::load(test::fixtures_dir() + "/k3-tiny"));
    names_.push_back("k3-tiny");
    for (const char* preset : {"tiny-alt", "demo"}) {
      const std::string dir = test::temp_dir(preset);
      K3SynthSpec spec = synth_preset(preset);
      if (std::string(preset) == "demo") {
        apply_synth_override(spec, "layers=4");  // keeps the test quick
        apply_synth_override(spec, "mla_layers=2+4");
      }
      write_k3_synth(spec, dir);
      models_.push_back(K3Model::load(dir));
      names_.push_back(preset);
    }
  }

  void greedyEqualsPlain() {
    for (size_t i = 0; i < models_.size(); ++i) check_model(*models_[i], names_[i], false);
  }

  void seededSamplingEqualsPlain() {
    for (size_t i = 0; i < models_.size(); ++i) check_model(*models_[i], names_[i], true);
  }

  // Sessions that take 1, 2 or 3 rows per pass (the GPU's limit in small): prompts longer than
  // that prefill in chunks, drafts are cut to rows - 1 guesses (none at 1 row, which says so),
  // and the ids are plain decoding's, greedy and sampled.
  void rowLimitedSessionEqualsPlain() {
    const K3Model& m = *models_[0];
    const auto prompts = make_prompts(600, 5);
    for (int p = 0; p < 12; ++p) {
      GenerateOptions g;
      g.max_new = 9;
      if (p % 2) g.sampling = sampled(77 + p);
      const auto ref = plain(m, prompts[p], g);
      for (int rows : {1, 2, 3}) {
        RowLimitedSession plain_limited(m, rows);
        QVERIFY(generate(plain_limited, prompts[p], g).ids == ref.ids);
        QVERIFY(plain_limited.widest() <= rows);
        test::OracleProposer oracle(prompts[p].size(), ref.ids);
        GenerateOptions gd = g;
        gd.drafter = &oracle;
        gd.draft_max = 7;
        gd.draft_always = true;
        RowLimitedSession s(m, rows);
        const auto got = generate(s, prompts[p], gd);
        QVERIFY2(
            got.ids == ref.ids,
            qPrintable(
                QString("prompt %1 rows %2: %3 vs plain %4").arg(p).arg(rows).arg(ids_str(got.ids), ids_str(ref.ids))));
        QVERIFY(s.widest() <= rows);
        if (rows == 1) {
          QCOMPARE(got.stats.proposed, 0);
          QVERIFY(got.stats.draft_fallback.find("one row per pass") != std::string::npos);
        } else {
          QVERIFY(got.stats.draft_fallback.empty());
          QVERIFY(got.stats.proposed > 0);
          QCOMPARE(got.stats.accepted, got.stats.proposed);  // the oracle is always right
        }
      }
    }
  }

  // Stops inside an accepted run (stop id, callback, max_new) and the session
  // afterwards: continuing from it gives what continuing a plain session gives.
  void stopsAndFinalState() {
    const K3Model& m = *models_[0];
    const auto prompts = make_prompts(600, 3);
    for (int p = 0; p < 10; ++p) {
      GenerateOptions g;
      g.max_new = 12;
      const auto full = plain(m, prompts[p], g);
      for (int stop_at : {0, 3, 7}) {
        GenerateOptions gs = g;
        gs.stop_ids = {full.ids[stop_at]};
        K3Session a(m), b(m);
        const auto ra = generate(a, prompts[p], gs);
        test::OracleProposer oracle(prompts[p].size(), full.ids);
        gs.drafter = &oracle;
        gs.draft_max = 5;
        gs.draft_always = true;
        int calls = 0;
        const auto rb = generate(b, prompts[p], gs, [&](int32_t) { return ++calls < 9; });
        // The plain run with the same callback.
        K3Session c(m);
        GenerateOptions gc = g;
        gc.stop_ids = gs.stop_ids;
        int calls_c = 0;
        const auto rc = generate(c, prompts[p], gc, [&](int32_t) { return ++calls_c < 9; });
        QCOMPARE(rb.ids, rc.ids);
        QCOMPARE(rb.stopped_by_callback, rc.stopped_by_callback);
        QCOMPARE(b.n_past(), c.n_past());
        QVERIFY(ra.ids.size() <= 12);
        // Same state: the next pass on both sessions gives identical logits.
        std::vector<float> lb, lc;
        const int32_t next[2] = {rb.ids.back(), 5};
        b.stage(next, lb);
        c.stage(next, lc);
        QVERIFY(lb.size() == lc.size() && std::memcmp(lb.data(), lc.data(), lb.size() * 4) == 0);
      }
    }
  }

  // A session that already holds a conversation: a second generate() call with a drafter
  // continues exactly like plain decoding.
  void secondTurnEqualsPlain() {
    const K3Model& m = *models_[1];
    const auto prompts = make_prompts(600, 5);
    NgramProposer ngram;
    GenerateOptions g;
    g.max_new = 10;
    K3Session a(m), b(m);
    for (int turn = 0; turn < 3; ++turn) {
      const auto ra = generate(a, prompts[turn], g);
      GenerateOptions gd = g;
      gd.drafter = &ngram;
      gd.draft_always = true;
      const auto rb = generate(b, prompts[turn], gd);
      QCOMPARE(rb.ids, ra.ids);
      QCOMPARE(b.n_past(), a.n_past());
    }
  }

  void failingDrafterFallsBack() {
    const K3Model& m = *models_[0];
    const auto prompts = make_prompts(600, 9);
    for (int after : {0, 2}) {
      GenerateOptions g;
      g.max_new = 14;
      const auto ref = plain(m, prompts[4], g);
      test::ThrowingProposer bad(after);
      g.drafter = &bad;
      g.draft_always = true;
      K3Session s(m);
      const auto got = generate(s, prompts[4], g);
      QCOMPARE(got.ids, ref.ids);
      QVERIFY(got.stats.draft_fallback.find("deliberate drafter failure") != std::string::npos);
    }
  }

  // With live economics (no draft_always) the output is the same; the stats add up.
  void economicsKeepsOutput() {
    const K3Model& m = *models_[2];
    const auto prompts = make_prompts(600, 13);
    for (int p = 0; p < 6; ++p) {
      GenerateOptions g;
      g.max_new = 24;
      const auto ref = plain(m, prompts[p], g);
      test::OracleProposer oracle(prompts[p].size(), ref.ids);
      g.drafter = &oracle;
      K3Session s(m);
      const auto got = generate(s, prompts[p], g);
      QCOMPARE(got.ids, ref.ids);
      int passes = 0, tokens = 0;
      for (size_t T = 1; T < got.stats.pass_count.size(); ++T) passes += got.stats.pass_count[T];
      QCOMPARE(passes, got.stats.verify_passes + got.stats.plain_passes);
      tokens = got.stats.plain_passes + got.stats.verify_passes + got.stats.accepted;
      QVERIFY(tokens >= int(got.ids.size()) - 1);
    }
  }
};

QTEST_GUILESS_MAIN(TestVerifier)
#include "test_verifier.moc"
