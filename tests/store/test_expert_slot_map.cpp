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

// One request for experts 0..n-1 of layer l, its misses claimed; its hits and uses added to *hits
// and *asked when `count`. False when a miss found no slot.
bool request_all(ExpertSlotMap& m, int l, int n, bool count, uint64_t* hits, uint64_t* asked) {
  m.begin_request(l);
  std::vector<int> miss;
  for (int e = 0; e < n; ++e) {
    const bool hit = m.use(l, e) >= 0;
    if (count) {
      ++*asked;
      *hits += hit;
    }
    if (!hit) miss.push_back(e);
  }
  for (int e : miss)
    if (m.claim(l, e) < 0) return false;
  return true;
}

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

// How many experts of layer l are resident.
int held(const ExpertSlotMap& m, int l, int experts) {
  int n = 0;
  for (int e = 0; e < experts; ++e) n += m.find(l, e) >= 0;
  return n;
}

// One pass over layers 0..layers-1 as the GPU runs it with copies ahead: each layer's request, its
// misses claimed, then every expert of the next layer not resident claimed ahead (a perfect guess;
// the slice's routers use all; the last layer's guesses would be for the next pass). Adds the
// copies (misses plus copies ahead) to *copies when `count`, and to *self_evictions the copies
// ahead that took a slot of the very layer they were for. False when a miss found no slot.
bool pass_with_copies_ahead(ExpertSlotMap& m, int layers, int experts, bool count, double* copies,
                            int* self_evictions) {
  for (int l = 0; l < layers; ++l) {
    uint64_t hits = 0, asked = 0;
    if (!request_all(m, l, experts, true, &hits, &asked)) return false;
    if (count) *copies += double(asked - hits);
    if (l + 1 == layers) continue;
    for (int e = 0; e < experts; ++e) {
      if (m.find(l + 1, e) >= 0) continue;
      const int had = held(m, l + 1, experts);
      if (m.claim_ahead(l + 1, e, m.request()) < 0) break;
      if (held(m, l + 1, experts) == had) ++*self_evictions;  // it took one of its own layer's slots
      if (count) *copies += 1;
    }
  }
  return true;
}

// That pass for `tokens` tokens: the copies per token over the last half of the tokens.
double cyclic_copies_ahead(ExpertSlotMap& m, int layers, int experts, int tokens, int* self_evictions) {
  double copies = 0;
  *self_evictions = 0;
  for (int t = 0; t < tokens; ++t)
    if (!pass_with_copies_ahead(m, layers, experts, t >= tokens / 2, &copies, self_evictions)) return -1;
  return copies / double(tokens - tokens / 2);
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

  void copiesAheadCopyNoMoreThanTheMisses() {
    // The same pass with the next layer's experts copied ahead (the GPU's default). Copies ahead
    // move a layer's copies under the compute of the layer before, so two layers' experts are held
    // at once: the other layers share S - 2d slots, and the pass copies N - (S - 2d) N / (N - 2d)
    // experts a token instead of N - (S - d) N / (N - d) (10 % more at 96 slots). Nothing beyond
    // that: a copy ahead that evicts one of its own layer's resident experts makes the request copy
    // that one back. The first spread policy did that once the next layer held the most slots (177
    // copies a token here instead of 115; H100, 96 GB row: decode 1.24 -> 1.63x its plan).
    const int layers = 12, experts = 16, N = layers * experts;
    for (const int n_slots : {96, 77}) {
      ExpertSlotMap plain(n_slots), ahead(n_slots);
      uint64_t hits = 0, asked = 0;
      for (int t = 0; t < 40; ++t)
        for (int l = 0; l < layers; ++l) QVERIFY(request_all(plain, l, experts, t >= 20, &hits, &asked));
      const double without = double(asked - hits) / 20.0;  // misses a token over the last 20
      int self = 0;
      const double with = cyclic_copies_ahead(ahead, layers, experts, 40, &self);
      const double held_two = N - double(n_slots - 2 * experts) * N / double(N - 2 * experts);
      qInfo(
          "cyclic pass, %d slots: %.1f copies a token without copies ahead, %.1f with (two layers held: %.1f; "
          "%d took their own layer's slot)",
          n_slots, without, with, held_two, self);
      QVERIFY(with >= 0);
      QCOMPARE(self, 0);
      QVERIFY2(with <= held_two + 0.5, qPrintable(QString("%1 > %2").arg(with).arg(held_two)));
    }
  }

  void decodeOverFewerLayersDropsTheOthers() {
    // The hybrid placements: a prompt pass runs every layer on the GPU, then decode runs only the
    // GPU's own layers (here 4 of 12: the first, middle or last four; one answer or three turns). The
    // GPU's layers then come round every 4 requests, not 12: the other layers' experts are not
    // needed until the next prompt and go first, and decode reaches the cyclic share of its own
    // layers, (S - d) / (N - d). Counting rounds by the 12 layers seen, the others stayed "due soon"
    // for the whole answer and held most of the slots (0.25 here).
    const int experts = 16, n_slots = 48, gpu_layers = 4;
    const double planner = double(n_slots - experts) / double(gpu_layers * experts - experts);
    for (const int first : {0, 4, 8})
      for (const int turns : {1, 3}) {
        ExpertSlotMap m(n_slots);
        uint64_t hits = 0, asked = 0;
        for (int turn = 0; turn < turns; ++turn) {
          for (int l = 0; l < 12; ++l) QVERIFY(request_all(m, l, experts, false, &hits, &asked));  // the prompt
          for (int t = 0; t < 6; ++t)
            for (int l = first; l < first + gpu_layers; ++l)
              QVERIFY(request_all(m, l, experts, turn + 1 == turns && t >= 2, &hits, &asked));
        }
        const double rate = double(hits) / double(asked);
        qInfo(
            "decode over layers %d-%d of 12 after a prompt pass (turn %d), %d slots: hit rate %.3f (tokens 3-6), "
            "planner %.3f",
            first, first + gpu_layers - 1, turns, n_slots, rate, planner);
        QVERIFY2(rate >= planner - 0.01, qPrintable(QString::number(rate)));
      }
  }

  void alternatingPassesKeepEachLayersPeriod() {
    // Speculative decoding on a hybrid plan, when some steps draft and some do not: verify passes
    // over all 12 layers on the GPU alternate with single-row steps over its own layers 0-3, copies
    // ahead in both. With one round for every layer (the current layer's last gap: 4 at a verify
    // pass's layers 0-3), layers 4-11, asked 16 requests before, looked dead though the same pass
    // needed them a few requests later: 166 copies a pair (found in review; counting rounds by the
    // layers seen copied 153, the policy before the claiming layer's own slots were spared 234).
    // Each layer's own period, the gap before the last where the last four alternate, keeps them:
    // 132, where keeping layers 0-3 whole and streaming the rest would copy 128.
    const int experts = 16, n_slots = 96;
    ExpertSlotMap m(n_slots);
    double copies = 0;
    int self = 0;
    for (int t = 0; t < 60; ++t) {
      QVERIFY(pass_with_copies_ahead(m, 12, experts, t >= 30, &copies, &self));
      QVERIFY(pass_with_copies_ahead(m, 4, experts, t >= 30, &copies, &self));
    }
    qInfo("verify passes over 12 layers alternating with steps over 4, %d slots: %.1f copies a pair", n_slots,
          copies / 30);
    QVERIFY2(copies / 30 <= 140, qPrintable(QString::number(copies / 30)));
  }

  void aLayerAskedTwiceInARowKeepsTheOthers() {
    // A layer asked for twice in a row (two requests in one pass) has a gap of 1 between them; the
    // other layers keep their own and stay due, so the cyclic pass hits what it did.
    const int layers = 12, experts = 16, n_slots = 96;
    ExpertSlotMap plain(n_slots), twice(n_slots);
    uint64_t hits_plain = 0, asked_plain = 0, hits_twice = 0, asked_twice = 0;
    for (int t = 0; t < 40; ++t)
      for (int l = 0; l < layers; ++l) {
        QVERIFY(request_all(plain, l, experts, t >= 20, &hits_plain, &asked_plain));
        QVERIFY(request_all(twice, l, experts, t >= 20, &hits_twice, &asked_twice));
        if (l == 5) QVERIFY(request_all(twice, l, experts, false, &hits_twice, &asked_twice));
      }
    const double plain_rate = double(hits_plain) / double(asked_plain);
    const double twice_rate = double(hits_twice) / double(asked_twice);
    qInfo("cyclic pass, layer 5 asked twice: hit rate %.4f against %.4f", twice_rate, plain_rate);
    QVERIFY2(twice_rate >= plain_rate - 0.005, qPrintable(QString("%1 < %2").arg(twice_rate).arg(plain_rate)));
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
      for (int l = 10; l < 14; ++l) QVERIFY(request_all(m, l, 16, t >= 150, &hits, &asked));
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
