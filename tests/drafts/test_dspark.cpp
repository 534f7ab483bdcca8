// DSpark: the dspark-tiny goldens (float64 reference from K3-SPEC.md section 5),
// the YaRN rotation against its direct formula, a synthesized DSpark checkpoint in
// the real layout against an independent double-precision forward written here,
// and speculative decoding with DSpark giving exactly the plain ids.
#include <cmath>
#include <complex>
#include <random>

#include "base/error.h"
#include "base/thread_pool.h"
#include "drafts/dspark_proposer.h"
#include "runtime/generate.h"
#include "drafting_check.h"
#include "support/test_support.h"
#include "synth/dspark_synth.h"

using namespace deltafin;

namespace {

// YaRN inverse frequencies straight from K3-SPEC.md section 5.
std::vector<double> spec_inv_freq(const YarnParams& p, int d) {
  const double pi = std::acos(-1.0);
  auto corr = [&](double r) { return d * std::log(p.original_max / (2 * pi * r)) / (2 * std::log(p.theta)); };
  const double low = std::max(std::floor(corr(p.beta_fast)), 0.0),
               high = std::min(std::ceil(corr(p.beta_slow)), d - 1.0);
  std::vector<double> out;
  for (int i = 0; i < d / 2; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double f = std::pow(p.theta, -2.0 * i / d);
    out.push_back((f / p.factor) * ramp + f * (1 - ramp));
  }
  return out;
}

// Adjacent pair (2i, 2i+1) as the complex number x_2i + i x_2i+1, times e^{i pos f_i}.
void spec_rotate(std::vector<double>& x, int64_t pos, const std::vector<double>& f) {
  for (size_t i = 0; i < f.size(); ++i) {
    const std::complex<double> z(x[2 * i], x[2 * i + 1]), r = z * std::polar(1.0, double(pos) * f[i]);
    x[2 * i] = r.real();
    x[2 * i + 1] = r.imag();
  }
}

std::vector<double> rms(const std::vector<double>& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> o(x.size());
  for (size_t i = 0; i < x.size(); ++i) o[i] = x[i] * inv * w[i];
  return o;
}

std::vector<double> mv(const Mat& m, const std::vector<double>& x) {
  std::vector<double> y(m.rows, 0.0);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) y[r] += double(m.at(r, c)) * x[c];
  return y;
}

// An independent double-precision DSpark block pass: expanded keys and values
// per head (no absorption), rope straight from the formula.
std::vector<double> reference_block(const DSparkModel& m, const std::vector<std::vector<double>>& taps_concat,
                                    int32_t anchor) {
  const DSparkConfig& c = m.config();
  const int H = c.hidden, T = c.block_size, N = c.nope, P = c.rope, R = c.kv_lora, Vd = c.v_head, nh = c.heads;
  const auto f = spec_inv_freq(c.yarn, P);
  const double m_all = 0.1 * c.yarn.mscale_all_dim * std::log(c.yarn.factor) + 1.0;
  const double scale = 1.0 / std::sqrt(double(N + P)) * m_all * m_all;
  const int64_t n = static_cast<int64_t>(taps_concat.size());
  std::vector<std::vector<double>> ctx;
  for (const auto& row : taps_concat) ctx.push_back(rms(mv(m.context_proj, row), m.context_norm, c.rms_eps));
  std::vector<std::vector<double>> h(T);
  for (int t = 0; t < T; ++t) {
    const int32_t id = t == 0 ? anchor : c.mask_token_id;
    for (int j = 0; j < H; ++j) h[t].push_back(m.target().weights().embed.at(id, j));
  }
  for (int l = 0; l < c.layers; ++l) {
    const DSparkLayerWeights& w = m.layers[l];
    // Keys/values for every source row: context rows from ctx, block rows from the normed block input.
    std::vector<std::vector<double>> xs(T);
    for (int t = 0; t < T; ++t) xs[t] = rms(h[t], w.input_norm, c.rms_eps);
    std::vector<std::vector<double>> kn, vv, kpe;  // [source][heads * N], [source][heads * Vd], [source][P]
    auto add_source = [&](const std::vector<double>& src, int64_t pos) {
      auto ckv = mv(w.kv_a_proj, src);
      std::vector<double> lat(ckv.begin(), ckv.begin() + R), pe(ckv.begin() + R, ckv.end());
      lat = rms(lat, w.kv_a_norm, c.rms_eps);
      spec_rotate(pe, pos, f);
      auto kvb = mv(w.kv_b_proj, lat);
      std::vector<double> k, v;
      for (int hh = 0; hh < nh; ++hh) {
        k.insert(k.end(), kvb.begin() + hh * (N + Vd), kvb.begin() + hh * (N + Vd) + N);
        v.insert(v.end(), kvb.begin() + hh * (N + Vd) + N, kvb.begin() + (hh + 1) * (N + Vd));
      }
      kn.push_back(k);
      vv.push_back(v);
      kpe.push_back(pe);
    };
    for (int64_t s = 0; s < n; ++s) add_source(ctx[s], s);
    for (int t = 0; t < T; ++t) add_source(xs[t], n + t);
    for (int t = 0; t < T; ++t) {
      auto qa = rms(mv(w.q_a_proj, xs[t]), w.q_a_norm, c.rms_eps);
      auto q = mv(w.q_b_proj, qa);
      std::vector<double> att(size_t(nh) * Vd, 0.0);
      for (int hh = 0; hh < nh; ++hh) {
        std::vector<double> qn(q.begin() + hh * (N + P), q.begin() + hh * (N + P) + N);
        std::vector<double> qp(q.begin() + hh * (N + P) + N, q.begin() + (hh + 1) * (N + P));
        spec_rotate(qp, n + t, f);
        std::vector<double> sc(kn.size());
        double mx = -1e300;
        for (size_t s = 0; s < kn.size(); ++s) {
          double a = 0;
          for (int i = 0; i < N; ++i) a += qn[i] * kn[s][hh * N + i];
          for (int i = 0; i < P; ++i) a += qp[i] * kpe[s][i];
          sc[s] = a * scale;
          mx = std::max(mx, sc[s]);
        }
        double sum = 0;
        for (double& v : sc) sum += (v = std::exp(v - mx));
        for (size_t s = 0; s < kn.size(); ++s)
          for (int i = 0; i < Vd; ++i) att[hh * Vd + i] += sc[s] / sum * vv[s][hh * Vd + i];
      }
      auto o = mv(w.o_proj, att);
      for (int j = 0; j < H; ++j) h[t][j] += o[j];
    }
    for (int t = 0; t < T; ++t) {
      auto x = rms(h[t], w.post_attn_norm, c.rms_eps);
      auto g = mv(w.gate, x), u = mv(w.up, x);
      for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      auto d = mv(w.down, g);
      for (int j = 0; j < H; ++j) h[t][j] += d[j];
    }
  }
  std::vector<double> out;
  for (int t = 0; t < T; ++t) {
    auto logits = mv(m.target().weights().lm_head, rms(h[t], m.final_norm, c.rms_eps));
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

double rel_l2(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// Engine taps for `ids`: one prefill with the trace on.
std::vector<std::vector<float>> target_taps(const K3Model& k3, const std::vector<int32_t>& ids) {
  K3Session s(k3);
  ForwardTrace tr;
  tr.layer_out = true;
  PassOptions po;
  po.trace = &tr;
  std::vector<float> logits;
  s.stage(ids, logits, po);
  s.commit(static_cast<int>(ids.size()));
  return tr.layers;
}

}  // namespace

class TestDSpark : public QObject {
  Q_OBJECT
  std::unique_ptr<K3Model> k3_;
  std::unique_ptr<DSparkModel> ds_;
  test::LoadedTensors golden_, k3golden_;

 private slots:
  void initTestCase() {
    ThreadPool::set_global_threads(1);
    k3_ = K3Model::load(test::fixtures_dir() + "/k3-tiny");
    ds_ = DSparkModel::load(test::fixtures_dir() + "/dspark-tiny", *k3_);
    golden_ = test::load_tensors(test::fixtures_dir() + "/dspark-tiny/golden.safetensors");
    k3golden_ = test::load_tensors(test::fixtures_dir() + "/k3-tiny/golden.safetensors");
  }

  void configIsRead() {
    const DSparkConfig& c = ds_->config();
    QCOMPARE(c.target_layer_ids, (std::vector<int>{1, 4, 7}));
    QCOMPARE(c.mask_token_id, 1021);
    QCOMPARE(c.block_size, 7);
    QVERIFY(c.yarn.yarn);
    QCOMPARE(c.yarn.factor, 32.0);
    QCOMPARE(c.markov_rank, 8);
  }

  // The golden cases, with the taps the golden used (k3-tiny's golden layer outputs).
  void goldenBlocksAndDrafts() {
    const int V = ds_->config().vocab, T = ds_->config().block_size;
    for (int cs = 0; cs < 3; ++cs) {
      const std::string p = "case." + std::to_string(cs) + ".";
      const auto ctx = golden_.i64(p + "context_ids");
      const auto anchor = golden_.i64(p + "anchor");
      // Find the k3-tiny golden prompt these context ids are a prefix of.
      int prompt = -1;
      for (int q = 0; q < 4 && prompt < 0; ++q) {
        const auto ids = k3golden_.i64("prompt." + std::to_string(q) + ".ids");
        if (ids.size() >= ctx.size() && std::equal(ctx.begin(), ctx.end(), ids.begin())) prompt = q;
      }
      QVERIFY(prompt >= 0);
      const std::string kp = "prompt." + std::to_string(prompt) + ".";
      const auto lo = k3golden_.f32(kp + "layer_out");
      const auto shape = k3golden_.shape(kp + "layer_out");  // [layers, T, hidden]
      DSparkProposer prop(*ds_);
      std::vector<const float*> taps;
      for (int l : ds_->config().target_layer_ids) taps.push_back(&lo[size_t(l) * shape[1] * shape[2]]);
      prop.add_context(static_cast<int>(ctx.size()), taps);
      QCOMPARE(prop.context_length(), int64_t(anchor[1]));
      std::vector<float> base;
      prop.block_logits(static_cast<int32_t>(anchor[0]), base);
      const auto want = golden_.f32(p + "base_logits");
      QCOMPARE(base.size(), size_t(T) * V);
      const double err = test::rel_l2(base.data(), want.data(), base.size());
      QVERIFY2(err <= 1e-4, qPrintable(QString("case %1 base logits rel-L2 %2").arg(cs).arg(err)));
      qInfo("case %d: base logits rel-L2 %.3g vs the float64 golden", cs, err);
      std::vector<int32_t> drafts;
      prop.markov(static_cast<int32_t>(anchor[0]), base, drafts);
      const auto gd = golden_.i64(p + "drafts");
      const auto margins = golden_.f32(p + "margins");
      for (int k = 0; k < T; ++k) {
        if (margins[k] <= 1e-3f) continue;
        QCOMPARE(int64_t(drafts[k]), gd[k]);
        // Once a draft matched with a clear margin the next conditioning is the golden one.
      }
      // The proposer interface gives the same drafts, cut to max_k.
      std::vector<int32_t> out;
      prop.propose({}, static_cast<int32_t>(anchor[0]), 4, out);
      QCOMPARE(out, std::vector<int32_t>(drafts.begin(), drafts.begin() + 4));
    }
  }

  // The same cases with the engine's own taps, arriving through on_commit in pieces.
  void engineTapsMatchGolden() {
    for (int cs = 0; cs < 3; ++cs) {
      const std::string p = "case." + std::to_string(cs) + ".";
      const auto c64 = golden_.i64(p + "context_ids");
      const auto anchor = golden_.i64(p + "anchor");
      std::vector<int32_t> ctx(c64.begin(), c64.end());
      const auto layers = target_taps(*k3_, ctx);
      DSparkProposer prop(*ds_);
      QVERIFY(prop.begin(0));
      const int n = static_cast<int>(ctx.size()), cut = n / 3;
      for (auto [a, b] : {std::pair{0, cut}, std::pair{cut, n}}) {
        std::vector<const float*> taps;
        for (int l : ds_->config().target_layer_ids) taps.push_back(&layers[l][size_t(a) * k3_->config().hidden]);
        prop.on_commit(a, std::span<const int32_t>(ctx).subspan(a, b - a), taps);
      }
      std::vector<float> base;
      prop.block_logits(static_cast<int32_t>(anchor[0]), base);
      const auto want = golden_.f32(p + "base_logits");
      const double err = test::rel_l2(base.data(), want.data(), base.size());
      QVERIFY2(err <= 5e-4, qPrintable(QString("case %1 rel-L2 %2").arg(cs).arg(err)));
    }
  }

  // The engine's YaRN against the formula, for the fixture's and the real K3 DSpark lane.
  void yarnMatchesDirectFormula() {
    for (int d : {ds_->config().rope, 64}) {
      const YarnParams& p = ds_->config().yarn;
      DSparkRope rope(p, d);
      const auto want = spec_inv_freq(p, d);
      QCOMPARE(rope.inv_freq().size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) QVERIFY(std::abs(rope.inv_freq()[i] - want[i]) <= 1e-15 * want[0]);
      // The real lane: low = floor(corr(32)) and high = ceil(corr(1)) with d 64, base 5e4, 32768 original.
      if (d == 64) {
        QCOMPARE(want.front(), 1.0);                                // below `low`: original frequency
        QCOMPARE(want.back(), std::pow(50000.0, -62.0 / 64) / 32);  // above `high`: interpolated by the factor
        QVERIFY(std::abs(rope.softmax_scale(192) - std::pow(192.0, -0.5) * std::pow(0.1 * std::log(32.0) + 1, 2)) <
                1e-15);
      }
      std::mt19937 rng(5);
      std::normal_distribution<float> nd;
      for (int64_t pos : {0LL, 1LL, 65LL, 4097LL, 1000003LL}) {
        std::vector<float> x(d);
        for (auto& v : x) v = nd(rng);
        std::vector<double> ref(x.begin(), x.end());
        spec_rotate(ref, pos, want);
        rope.rotate(x.data(), pos);
        // fp32 angle products are formed in double by the engine; the tolerance covers
        // float rounding of cos/sin and of the products.
        for (int i = 0; i < d; ++i)
          QVERIFY2(std::abs(x[i] - ref[i]) < 2e-5 * (1 + std::abs(ref[i])),
                   qPrintable(QString("pos %1 i %2").arg(pos).arg(i)));
      }
    }
  }

  // A synthesized DSpark in the real layout (deltafin synth --preset dspark-tiny-alt)
  // against the double-precision reference above, then drafting on its target.
  void synthesizedCheckpoint() {
    const std::string tdir = test::temp_dir("k3-alt"), ddir = test::temp_dir("dspark-alt");
    const DSparkSynthSpec spec = dspark_synth_preset("dspark-tiny-alt");
    write_k3_synth(synth_preset(spec.target_preset), tdir);
    write_dspark_synth(spec, ddir);
    // The real layout: the same tensor names and config fields as the dspark-tiny fixture.
    auto fixture = Checkpoint::open(test::fixtures_dir() + "/dspark-tiny");
    auto synth = Checkpoint::open(ddir);
    auto fnames = fixture->tensor_names(), snames = synth->tensor_names();
    QCOMPARE(snames, fnames);
    auto k3 = K3Model::load(tdir);
    auto ds = DSparkModel::load(ddir, *k3);
    QCOMPARE(ds->config().target_layer_ids, spec.target_layer_ids);
    std::mt19937 rng(3);
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<int32_t> ids;
      for (int i = 0; i < 5 + 9 * trial; ++i) ids.push_back(int32_t(rng() % 600));
      const auto layers = target_taps(*k3, ids);
      const int Ht = k3->config().hidden;
      std::vector<std::vector<double>> cat(ids.size());
      std::vector<const float*> taps;
      for (int l : ds->config().target_layer_ids) {
        taps.push_back(layers[l].data());
        for (size_t t = 0; t < ids.size(); ++t)
          cat[t].insert(cat[t].end(), &layers[l][t * Ht], &layers[l][(t + 1) * Ht]);
      }
      DSparkProposer prop(*ds);
      prop.add_context(static_cast<int>(ids.size()), taps);
      const int32_t anchor = int32_t(rng() % 600);
      std::vector<float> base;
      prop.block_logits(anchor, base);
      const auto ref = reference_block(*ds, cat, anchor);
      const double err = rel_l2(base, ref);
      QVERIFY2(err < 1e-5, qPrintable(QString("trial %1 rel-L2 %2").arg(trial).arg(err)));
      qInfo("synthesized trial %d: rel-L2 %.3g vs the double reference", trial, err);
    }
    // Drafting with it on its synthesized target: 50 prompts, greedy and seeded sampling.
    for (int p = 0; p < 50; ++p) {
      std::vector<int32_t> prompt;
      for (int i = 0; i < 1 + p % 17; ++i) prompt.push_back(int32_t(rng() % 600));
      DSparkProposer dp(*ds);
      const auto r = test::decode_both(*k3, prompt, test::sweep_options(p, 8, 1.1f, 0.8f, 0, 5), dp);
      QCOMPARE(r.drafted.ids, r.plain.ids);
      QVERIFY(r.drafted.stats.proposed > 0 && r.fallback().empty());
    }
    // Its own embed_tokens is not the target's: the trap is real in the synthesized layout too.
    const CatalogEntry* e = synth->find("embed_tokens.weight");
    QVERIFY(e != nullptr);
    QVERIFY(std::memcmp(synth->data(*e), k3->weights().embed.data, 64) != 0);
  }

  // Speculative decoding with DSpark: identical ids, greedy and sampled, 50 prompts.
  void draftingEqualsPlain() {
    std::mt19937 rng(17);
    int proposed = 0, accepted = 0;
    for (int p = 0; p < 50; ++p) {
      std::vector<int32_t> prompt;
      const int len = 1 + int(rng() % 30);
      for (int i = 0; i < len; ++i) prompt.push_back(int32_t(rng() % 768));
      DSparkProposer prop(*ds_);
      K3Session b(*k3_);
      const auto r = test::decode_both(*k3_, prompt, test::sweep_options(p, 10, 0.8f, 1.f, 40, 77), prop, &b);
      QCOMPARE(r.drafted.ids, r.plain.ids);
      QVERIFY2(r.fallback().empty(), r.fallback().c_str());
      QCOMPARE(prop.context_length(), b.n_past());
      proposed += r.drafted.stats.proposed;
      accepted += r.drafted.stats.accepted;
    }
    QVERIFY(proposed > 0);
    qInfo("dspark-tiny on k3-tiny: %d guesses, %d accepted", proposed, accepted);
  }

  void wrongTargetIsRejected() {
    const std::string tdir = test::temp_dir("k3-alt2");
    write_k3_synth(synth_preset("tiny-alt"), tdir);
    auto other = K3Model::load(tdir);
    QVERIFY_THROWS_EXCEPTION(deltafin::Error, DSparkModel::load(test::fixtures_dir() + "/dspark-tiny", *other));
  }
};

QTEST_GUILESS_MAIN(TestDSpark)
#include "test_dspark.moc"
