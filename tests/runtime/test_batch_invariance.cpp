// A position's logits are bit-identical whether computed alone, inside a prefill
// chunk, or inside a verify pass; partial commits and rollbacks leave exactly
// the state of the committed prefix.
#include <cstring>
#include <random>

#include "base/thread_pool.h"
#include "runtime/k3_model.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"

using namespace deltafin;

namespace {

std::vector<float> logits_in_chunks(const K3Model& m, const std::vector<int32_t>& ids, int chunk) {
  K3Session s(m);
  std::vector<float> all, part;
  for (size_t i = 0; i < ids.size(); i += chunk) {
    const size_t n = std::min<size_t>(chunk, ids.size() - i);
    s.stage(std::span<const int32_t>(ids).subspan(i, n), part);
    s.commit(int(n));
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace

class TestBatchInvariance : public QObject {
  Q_OBJECT
  std::vector<std::unique_ptr<K3Model>> models_;
  std::vector<std::vector<int32_t>> prompts_;

 private slots:
  void initTestCase() {
    models_.push_back(K3Model::load(test::fixtures_dir() + "/k3-tiny"));
    auto g = test::load_tensors(test::fixtures_dir() + "/k3-tiny/golden.safetensors");
    auto p = g.i64("prompt.3.ids");
    prompts_.emplace_back(p.begin(), p.end());
    // A checkpoint with another layout (MLA first, block size 2, two dense layers, no shared expert).
    const std::string dir = test::temp_dir("alt");
    write_k3_synth(synth_preset("tiny-alt"), dir);
    models_.push_back(K3Model::load(dir));
    std::mt19937 rng(1);
    std::vector<int32_t> q;
    for (int i = 0; i < 41; ++i) q.push_back(int32_t(rng() % 600));
    prompts_.push_back(q);
  }

  void prefillChunksEqualSingleSteps() {
    for (size_t i = 0; i < models_.size(); ++i) {
      const auto one = logits_in_chunks(*models_[i], prompts_[i], 1);
      for (int chunk : {2, 7, 16, int(prompts_[i].size())})
        QVERIFY2(same_bits(one, logits_in_chunks(*models_[i], prompts_[i], chunk)),
                 qPrintable(QString("chunk %1").arg(chunk)));
    }
  }

  void partialCommitEqualsPlainDecoding() {
    for (size_t i = 0; i < models_.size(); ++i) {
      const K3Model& m = *models_[i];
      const auto& ids = prompts_[i];
      const size_t head = ids.size() - 8;
      std::span<const int32_t> all(ids);
      // Plain: everything one pass at a time, committed.
      const auto plain = logits_in_chunks(m, ids, 1);
      const int V = m.config().vocab;
      for (int keep : {0, 1, 3, 5, 8}) {
        K3Session s(m);
        s.prefill(all.first(head));
        std::vector<float> verify;
        PassOptions o;
        o.partial_commit = true;
        s.stage(all.subspan(head, 5), verify, o);
        // Verify rows equal the plain rows bit for bit.
        QVERIFY(std::memcmp(verify.data(), &plain[head * V], size_t(5) * V * 4) == 0);
        const int n = std::min(keep, 5);
        s.commit(n);
        QCOMPARE(s.n_past(), int64_t(head + n));
        // Continue with the true next tokens: identical to the plain run.
        std::vector<float> next;
        s.stage(all.subspan(head + n, 3), next);
        s.commit(3);
        QVERIFY2(std::memcmp(next.data(), &plain[(head + n) * V], size_t(3) * V * 4) == 0,
                 qPrintable(QString("model %1 keep %2").arg(i).arg(keep)));
      }
    }
  }

  void rollbackRestoresState() {
    const K3Model& m = *models_[0];
    const auto& ids = prompts_[0];
    std::span<const int32_t> all(ids);
    K3Session a(m), b(m);
    a.prefill(all.first(20));
    b.prefill(all.first(20));
    std::vector<float> junk, la, lb;
    PassOptions o;
    o.partial_commit = true;
    const int32_t wrong[4] = {5, 6, 7, 8};
    a.stage(wrong, junk, o);
    a.rollback();
    QCOMPARE(a.n_past(), int64_t(20));
    a.stage(all.subspan(20, 4), la);
    b.stage(all.subspan(20, 4), lb);
    QVERIFY(same_bits(la, lb));
  }

  void threadCountDoesNotChangeResults() {
    const K3Model& m = *models_[1];
    const auto base = logits_in_chunks(m, prompts_[1], 5);
    ThreadPool::set_global_threads(1);
    const auto single = logits_in_chunks(m, prompts_[1], 5);
    ThreadPool::set_global_threads(3);
    const auto three = logits_in_chunks(m, prompts_[1], 5);
    ThreadPool::set_global_threads(0);
    QVERIFY(same_bits(base, single));
    QVERIFY(same_bits(base, three));
  }
};

QTEST_GUILESS_MAIN(TestBatchInvariance)
#include "test_batch_invariance.moc"
