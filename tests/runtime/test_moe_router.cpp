// The K3 router (K3-SPEC.md section 3, "MoE") on hand-made logits whose answers are known without
// running it: ties go to the lower expert id, the bias chooses but the plain score weights, the
// chosen ids come out ascending, weights renormalize over the chosen only. sigmoid(0) = 0.5
// exactly, so most expected weights are exact.
#include <cmath>

#include "runtime/moe_router.h"
#include "support/test_support.h"

using namespace deltafin;

namespace {

RouterChoice route(const std::vector<float>& logits, const std::vector<float>& bias, int k, bool renormalize = true,
                   float scaling = 1.f) {
  RouterChoice c;
  route_token(logits.data(), bias.data(), int(logits.size()), k, renormalize, scaling, c);
  return c;
}

}  // namespace

class TestMoeRouter : public QObject {
  Q_OBJECT

 private slots:
  void all_equal_keys_choose_the_lowest_ids() {
    const RouterChoice c = route(std::vector<float>(8, 0.f), std::vector<float>(8, 0.f), 4);
    QCOMPARE(c.ids, (std::vector<int32_t>{0, 1, 2, 3}));
    for (float w : c.weights) QVERIFY(test::same_bits(w, 0.25f));  // 0.5 / (4 * 0.5)
  }

  void a_tie_at_the_boundary_goes_to_the_lower_id() {
    // Keys: expert 6 first, then 5 and 2 tie for the second place (via the bias), 1 and 3 below.
    const std::vector<float> logits(8, 0.f);
    const std::vector<float> bias = {-1.f, -0.5f, 0.25f, -0.5f, -1.f, 0.25f, 1.f, -1.f};
    QCOMPARE(route(logits, bias, 2).ids, (std::vector<int32_t>{2, 6}));
    QCOMPARE(route(logits, bias, 3).ids, (std::vector<int32_t>{2, 5, 6}));
    std::vector<int> order;
    top_k_by_key(bias.data(), 8, 4, order);
    std::sort(order.begin(), order.end());
    QCOMPARE(order, (std::vector<int>{1, 2, 5, 6}));  // 1 and 3 tie for fourth: 1 wins
  }

  void the_bias_chooses_and_the_score_weights() {
    // Experts 0-3 score higher (logit 4) but carry a bias of -1; experts 4-7 score 0.5 with a bias
    // of 0.25: keys 0.98 - 1 < 0.75, so 4-7 are chosen, weighted by their plain score 0.5 (never
    // by the key 0.75), and renormalized over the plain scores.
    const std::vector<float> logits = {4.f, 4.f, 4.f, 4.f, 0.f, 0.f, 0.f, 0.f};
    const std::vector<float> bias = {-1.f, -1.f, -1.f, -1.f, .25f, .25f, .25f, .25f};
    const RouterChoice c = route(logits, bias, 4, /*renormalize=*/false, /*scaling=*/2.5f);
    QCOMPARE(c.ids, (std::vector<int32_t>{4, 5, 6, 7}));
    for (float w : c.weights) QVERIFY(test::same_bits(w, 1.25f));  // 0.5 * 2.5
    const RouterChoice r = route(logits, bias, 4, /*renormalize=*/true, /*scaling=*/2.5f);
    QCOMPARE(r.ids, (std::vector<int32_t>{4, 5, 6, 7}));
    for (float w : r.weights) QVERIFY(test::same_bits(w, 0.625f));  // 0.5 / (4 * 0.5) * 2.5
  }

  void chosen_ids_come_out_ascending() {
    std::vector<float> logits(8, -4.f);
    logits[7] = 3.f;
    logits[3] = 2.f;
    logits[5] = 1.f;
    QCOMPARE(route(logits, std::vector<float>(8, 0.f), 3).ids, (std::vector<int32_t>{3, 5, 7}));
  }

  void weights_renormalize_over_the_chosen_only() {
    // Scores 0.5 and sigmoid(ln 3) = 0.75 chosen, the rest near 0: weights 0.4 and 0.6.
    std::vector<float> logits(6, -20.f);
    logits[1] = 0.f;
    logits[4] = std::log(3.f);
    const RouterChoice c = route(logits, std::vector<float>(6, 0.f), 2, true, 1.f);
    QCOMPARE(c.ids, (std::vector<int32_t>{1, 4}));
    QVERIFY2(std::fabs(c.weights[0] - 0.4) < 1e-6 && std::fabs(c.weights[1] - 0.6) < 1e-6,
             qPrintable(QString("%1 %2").arg(c.weights[0]).arg(c.weights[1])));
    const RouterChoice plain = route(logits, std::vector<float>(6, 0.f), 2, false, 1.f);
    QVERIFY(test::same_bits(plain.weights[0], 0.5f));
    QVERIFY(std::fabs(plain.weights[1] - 0.75) < 1e-6);
  }
};

QTEST_GUILESS_MAIN(TestMoeRouter)
#include "test_moe_router.moc"
