// The replacement policy of the VRAM expert tier (ExpertSlotMap), without a GPU: a pass that
// cycles through more experts than there are slots hits the planner's share (LRU hits nothing),
// skewed routing keeps the most used experts whenever they first came, experts that stop being used
// make room for the new working set, and a request never evicts an expert it is using.
#include <QtTest>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "store/expert_slot_map.h"

using namespace deltafin;

namespace {

// Every expert of `layers` layers, `experts` each, requested layer by layer for `tokens` tokens;
// the hit rate over the last half of the tokens.
double cyclic_hit_rate(ExpertSlotMap& m, int layers, int experts, int tokens) {
  uint64_t hits = 0, asked = 0;
  for (int t = 0; t < tokens; ++t)
    for (int l = 0; l < layers; ++l) {
      m.begin_request(l);
      std::vector<int> miss;
      for (int e = 0; e < experts; ++e) {
        const bool hit = m.use(l, e) >= 0;
        if (t >= tokens / 2) {
          ++asked;
          hits += hit;
        }
        if (!hit) miss.push_back(e);
      }
      for (int e : miss) {
        const int s = m.claim(l, e);
        if (s < 0) return -1;
        if (m.layer_of(s) != l || m.expert_of(s) != e) return -2;
      }
    }
  return double(hits) / double(asked);
}

// The same with plain LRU, for contrast: what the tier did before.
double lru_cyclic_hit_rate(int n_slots, int layers, int experts, int tokens) {
  std::vector<int64_t> key(size_t(n_slots), -1);
  std::vector<uint64_t> used(size_t(n_slots), 0);
  uint64_t tick = 0, hits = 0, asked = 0;
  for (int t = 0; t < tokens; ++t)
    for (int l = 0; l < layers; ++l) {
      ++tick;
      for (int e = 0; e < experts; ++e) {
        const int64_t k = int64_t(l) * 100000 + e;
        int s = -1;
        for (int i = 0; i < n_slots; ++i)
          if (key[size_t(i)] == k) s = i;
        if (t >= tokens / 2) {
          ++asked;
          hits += s >= 0;
        }
        if (s < 0) {
          for (int i = 0; i < n_slots; ++i)
            if (used[size_t(i)] != tick && (s < 0 || used[size_t(i)] < used[size_t(s)])) s = i;
          key[size_t(s)] = k;
        }
        used[size_t(s)] = tick;
      }
    }
  return double(hits) / double(asked);
}

}  // namespace

class TestExpertSlotMap : public QObject {
  Q_OBJECT
 private slots:
  void aCyclicPassHitsThePlannersShare() {
    // The placement slice's 96 GB machine: 12 MoE layers of 16 experts, all used every token. Each
    // miss takes a slot of the layer holding the most, so the resident share spreads over the
    // layers and hits the planner's (S - d) / (N - d); a fixed set of S - d experts would hit
    // (S - d) / N. Two slot counts: the 96 of the test's machine and the 77 the H100 runs had.
    const int layers = 12, experts = 16, N = layers * experts;
    for (const int n_slots : {96, 77}) {
      ExpertSlotMap m(n_slots);
      const double rate = cyclic_hit_rate(m, layers, experts, 40);
      const double lru = lru_cyclic_hit_rate(n_slots, layers, experts, 40);
      const double planner = double(n_slots - experts) / double(N - experts);
      // Between tokens every layer but the last (just asked for: all its experts are in) holds about
      // the same share, not some layers whole and others none: a GPU's copies of each layer's
      // misses then have the layer before to overlap.
      int least = experts, most = 0;
      for (int l = 0; l + 1 < layers; ++l) {
        int held = 0;
        for (int e = 0; e < experts; ++e) held += m.find(l, e) >= 0;
        least = std::min(least, held);
        most = std::max(most, held);
      }
      qInfo(
          "cyclic pass, %d slots for %d experts: hit rate %.4f, planner %.4f, fixed set %.4f, plain LRU %.3f; "
          "%d-%d experts of each earlier layer held after the last",
          n_slots, N, rate, planner, double(n_slots - experts) / N, lru, least, most);
      QVERIFY(rate >= 0);
      QVERIFY2(rate >= planner - 0.002, qPrintable(QString::number(rate)));
      QCOMPARE(lru, 0.0);
      QVERIFY2(most - least <= 2, qPrintable(QString("%1-%2").arg(least).arg(most)));
    }
  }

  void skewedRoutingKeepsTheMostUsedExperts() {
    // 8 layers of 128 experts, 16 per token, each layer's experts used with Zipf odds (1 / rank)
    // in a shuffled order; 120 slots. The tier should come close to the best fixed set of the
    // 104 slots a pass's misses leave (the most used experts of the second half's own routing).
    // Counting uses only while resident (the policy before) kept whichever experts came first:
    // 0.32 here against this policy's 0.44 (and the cyclic pass above at the fixed set's share).
    const int layers = 8, experts = 128, k = 16, n_slots = 120, tokens = 120;
    std::mt19937 rng(1);
    std::vector<std::vector<int>> order(layers);
    for (auto& o : order) {
      o.resize(experts);
      std::iota(o.begin(), o.end(), 0);
      std::shuffle(o.begin(), o.end(), rng);
    }
    std::vector<double> odds(experts);
    for (int r = 0; r < experts; ++r) odds[size_t(r)] = 1.0 / (r + 1);
    std::discrete_distribution<int> rank(odds.begin(), odds.end());
    ExpertSlotMap m(n_slots);
    std::map<std::pair<int, int>, int> later;  // uses in the second half
    uint64_t hits = 0, asked = 0;
    for (int t = 0; t < tokens; ++t)
      for (int l = 0; l < layers; ++l) {
        std::set<int> chosen;
        while (int(chosen.size()) < k) chosen.insert(order[size_t(l)][size_t(rank(rng))]);
        m.begin_request(l);
        std::vector<int> miss;
        for (int e : chosen) {
          const bool hit = m.use(l, e) >= 0;
          if (t >= tokens / 2) {
            ++asked;
            hits += hit;
            ++later[{l, e}];
          }
          if (!hit) miss.push_back(e);
        }
        for (int e : miss) QVERIFY(m.claim(l, e) >= 0);
      }
    std::vector<int> counts;
    for (const auto& [key, n] : later) counts.push_back(n);
    std::sort(counts.rbegin(), counts.rend());
    const int fixed_slots = n_slots - k;
    const double best_fixed =
        double(std::accumulate(counts.begin(), counts.begin() + std::min<size_t>(counts.size(), fixed_slots), 0)) /
        double(asked);
    const double rate = double(hits) / double(asked);
    qInfo("skewed routing, %d slots: hit rate %.3f, best fixed set of %d %.3f", n_slots, rate, fixed_slots, best_fixed);
    QVERIFY2(rate >= 0.9 * best_fixed, qPrintable(QString::number(rate)));
  }

  void randomUseKeepsTheMapConsistent() {
    // Requests of random layers and experts, guesses ahead, failed fills (forget) and a clear: the
    // map never hands a request's own slot to its misses, and every held slot is found under its
    // (layer, expert).
    std::mt19937 rng(5);
    ExpertSlotMap m(24, 64);
    for (int step = 0; step < 4000; ++step) {
      const int layer = int(rng() % 9);
      m.begin_request(layer);
      std::set<int> chosen;
      const int k = 1 + int(rng() % 8);
      while (int(chosen.size()) < k) chosen.insert(int(rng() % 40));
      std::set<int> mine;
      std::vector<int> miss;
      for (int e : chosen) {
        const int s = m.use(layer, e);
        if (s >= 0) mine.insert(s);
        else miss.push_back(e);
      }
      for (int e : miss) {
        const int s = m.claim(layer, e);
        QVERIFY(s >= 0);
        QVERIFY2(!mine.count(s), "a miss took a slot its own request uses");
        mine.insert(s);
      }
      if (rng() % 3 == 0)
        for (int g = 0; g < 4; ++g) {
          const int s = m.claim_ahead(layer + 1, int(rng() % 40), m.request());
          if (s >= 0) QVERIFY(!mine.count(s));
        }
      if (rng() % 50 == 0) m.forget(int(rng() % 24));
      if (rng() % 1000 == 0) m.clear();
      for (int s = 0; s < m.slot_count(); ++s)
        if (m.holds(s)) QCOMPARE(m.find(m.layer_of(s), m.expert_of(s)), s);
    }
  }

  void aModelThatFitsIsAllHits() {
    ExpertSlotMap m(64);
    QCOMPARE(cyclic_hit_rate(m, 4, 16, 10), 1.0);
  }

  void unusedExpertsMakeRoomForANewWorkingSet() {
    // Layers 0-3 used for a while, then only layers 10-13: once the old scores have decayed (a
    // half-life of 64 requests here), the new set is resident and hit every time.
    ExpertSlotMap m(64, 64);
    QVERIFY(cyclic_hit_rate(m, 4, 16, 20) == 1.0);
    uint64_t hits = 0, asked = 0;
    for (int t = 0; t < 200; ++t)
      for (int l = 10; l < 14; ++l) {
        m.begin_request(l);
        std::vector<int> miss;
        for (int e = 0; e < 16; ++e) {
          const bool hit = m.use(l, e) >= 0;
          if (t >= 150) {
            ++asked;
            hits += hit;
          }
          if (!hit) miss.push_back(e);
        }
        for (int e : miss) QVERIFY(m.claim(l, e) >= 0);
      }
    qInfo("after the switch: hit rate %.3f over the last 50 tokens", double(hits) / double(asked));
    QCOMPARE(hits, asked);
    for (int l = 0; l < 4; ++l)
      for (int e = 0; e < 16; ++e) QCOMPARE(m.find(l, e), -1);
  }

  void aRequestNeverEvictsWhatItUses() {
    ExpertSlotMap m(4);
    m.begin_request(0);
    for (int e = 0; e < 4; ++e) QCOMPARE(m.claim(0, e), e);
    bool evicted = true;
    QCOMPARE(m.claim(0, 4, &evicted), -1);  // all four slots are this request's
    m.begin_request(1);
    QCOMPARE(m.use(0, 2), 2);
    const int s = m.claim(1, 0, &evicted);
    QVERIFY(evicted);
    QVERIFY(s != 2);
    QCOMPARE(m.find(1, 0), s);
    m.forget(s);
    QCOMPARE(m.find(1, 0), -1);
    QVERIFY(!m.holds(s));
    m.clear();
    for (int i = 0; i < 4; ++i) QVERIFY(!m.holds(i));
  }

  void expertsFetchedAheadSpareTheCurrentRequest() {
    ExpertSlotMap m(8);
    m.begin_request(0);
    for (int e = 0; e < 4; ++e) QCOMPARE(m.claim(0, e), e);
    // The next layer's guesses: the four free slots, never the current request's.
    for (int e = 0; e < 4; ++e) QCOMPARE(m.claim_ahead(1, e, m.request()), 4 + e);
    QCOMPARE(m.claim_ahead(1, 4, m.request()), -1);  // every slot is this request's
    QCOMPARE(m.claim_ahead(1, 0, m.request()), -1);  // already there
    // Layer 1 asks for three of the four guesses; the wrong one (never used) goes first.
    m.begin_request(1);
    for (int e = 0; e < 3; ++e) QCOMPARE(m.use(1, e), 4 + e);
    QCOMPARE(m.claim(1, 9), 7);
    QCOMPARE(m.find(1, 3), -1);
    // Guesses made while layer 1 runs may take layer 0's slots (an earlier request), not layer 1's.
    const int s = m.claim_ahead(2, 0, m.request());
    QVERIFY(s >= 0 && s < 4);
  }
};

QTEST_APPLESS_MAIN(TestExpertSlotMap)
#include "test_expert_slot_map.moc"
