// Every op of kernels/cuda/k3 against a float64 CPU reference written here from K3-SPEC.md section 3
// (plain loops, no engine code, so the standalone deltafin-cuda-check runs them too), and the row
// ops' batch invariance. One Result per op and shape: the rows of deltafin-cuda-check's table.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "cuda/k3/k3_ops.h"
#include "cuda/situ.h"
#include "cuda_checks.h"
#include "support/worst_error.h"

namespace deltafin::cuda::check {
namespace {

using std::vector;

struct Io {
  std::mt19937_64 rng;
  Stream s = nullptr;  // the legacy default stream: every download waits for the ops before it
  explicit Io(uint64_t seed) : rng(seed) {}
  vector<float> randn(size_t n, float sd = 1.f) {
    std::normal_distribution<float> d(0.f, sd);
    vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
  }
  template <class T>
  DeviceBuffer up(const vector<T>& v) {
    DeviceBuffer b(std::max<size_t>(v.size(), 1) * sizeof(T));
    b.upload(v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T = float>
  vector<T> down(const DeviceBuffer& b, size_t n) {
    vector<T> v(n);
    synchronize();
    b.download(v.data(), n * sizeof(T));
    return v;
  }
  // A poisoned output buffer (NaN bytes): an element the op does not write fails the comparison.
  DeviceBuffer out(size_t floats) {
    DeviceBuffer b(std::max<size_t>(floats, 1) * 4);
    b.fill_byte(0xff);
    return b;
  }
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
float bf16f(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A row of the table: the GPU's output against the float64 reference; passes when the normwise
// error max|gpu - ref| / max|ref| is at most rel_limit (0: bit for bit against the fp32 reference).
Result row(const std::string& op, const std::string& shape, const vector<float>& gpu, const vector<double>& ref,
           double rel_limit, const std::string& what = "vs float64 CPU reference") {
  const Errors e = errors(gpu.data(), ref.data(), ref.size());
  Result r;
  r.op = op;
  r.shape = shape;
  r.max_abs = e.max_abs;
  r.max_rel = e.max_rel;
  r.ok = rel_limit > 0 ? e.max_rel <= rel_limit : e.max_abs == 0;
  r.name = op + " " + shape + " " + what;
  std::ostringstream d;
  d.precision(3);
  if (rel_limit > 0) d << "normwise error " << e.max_rel << " (limit " << rel_limit << ")";
  else d << "max |difference| " << e.max_abs << " (must be 0)";
  r.detail = d.str();
  return r;
}

vector<double> widen(const vector<float>& v) { return vector<double>(v.begin(), v.end()); }

void elementwise(Io& io, vector<Result>& out) {
  const int64_t n = 100003;
  const auto a = io.randn(n), b = io.randn(n), c = io.randn(n), g = io.randn(n, 4.f);
  auto da = io.up(a), db = io.up(b), dc = io.up(c), dg = io.up(g);
  const std::string shape = "n=" + std::to_string(n);
  auto o = io.out(n);
  k3::copy(da.as<float>(), o.as<float>(), n, io.s);
  out.push_back(row("k3::copy", shape, io.down(o, n), widen(a), 0, "vs the input"));
  o.fill_byte(0xff);
  k3::add(da.as<float>(), db.as<float>(), o.as<float>(), n, io.s);
  {
    vector<float> f(n);
    for (int64_t i = 0; i < n; ++i) f[i] = a[i] + b[i];
    out.push_back(row("k3::add", shape, io.down(o, n), widen(f), 0, "vs fp32 CPU, bit for bit"));
  }
  o.fill_byte(0xff);
  k3::add_sum(da.as<float>(), db.as<float>(), dc.as<float>(), o.as<float>(), n, io.s);
  {
    vector<float> f(n);
    for (int64_t i = 0; i < n; ++i) f[i] = a[i] + (b[i] + c[i]);
    out.push_back(row("k3::add_sum", shape, io.down(o, n), widen(f), 0, "a + (b + c) vs fp32 CPU, bit for bit"));
  }
  o.fill_byte(0xff);
  k3::mul_sigmoid(da.as<float>(), dg.as<float>(), o.as<float>(), n, io.s);
  vector<double> ref(n);
  for (int64_t i = 0; i < n; ++i) ref[i] = a[i] * sigmoid(g[i]);
  out.push_back(row("k3::mul_sigmoid", shape, io.down(o, n), ref, 1e-6));

  // SiTU GLU over stacked [gate | up] rows, K3's betas, over the whole range where tanh saturates.
  const int T = 5;
  const int64_t w = 3072;
  vector<float> gu(size_t(T) * 2 * w);
  std::uniform_real_distribution<float> wide(-40.f, 40.f);
  for (int t = 0; t < T; ++t)
    for (int64_t j = 0; j < w; ++j) {
      gu[size_t(t) * 2 * w + j] = wide(io.rng);
      gu[size_t(t) * 2 * w + w + j] = 2.f * wide(io.rng);
    }
  auto dgu = io.up(gu);
  auto h = io.out(size_t(T) * w);
  k3::situ_glu_rows(dgu.as<float>(), T, w, kSituBeta, kSituLinearBeta, h.as<float>(), io.s);
  const auto gh = io.down(h, size_t(T) * w);
  vector<double> rh(gh.size());
  double worst_elem = 0;
  for (int t = 0; t < T; ++t)
    for (int64_t j = 0; j < w; ++j) {
      const double gg = gu[size_t(t) * 2 * w + j], uu = gu[size_t(t) * 2 * w + w + j];
      const double want = 4 * std::tanh(gg / 4) * sigmoid(gg) * 25 * std::tanh(uu / 25);
      rh[size_t(t) * w + j] = want;
      const double got = gh[size_t(t) * w + j];
      worst_elem = test::worst_of(worst_elem, std::fabs(got - want) / (std::fabs(want) + 1e-30));
    }
  Result r = row("k3::situ_glu_rows", "T=5 n=3072 g in [-40,40] u in [-80,80]", gh, rh, 1e-6);
  // Each element on its own: four fp32 functions and products, a few ulps.
  r.ok = r.ok && worst_elem <= 2e-6;
  r.detail += "; worst elementwise relative error " + std::to_string(worst_elem) + " (limit 2e-6)";
  out.push_back(r);
}

void matrices(Io& io, vector<Result>& out) {
  {  // fp32 weights: a warp per output row
    const int64_t O = 300, I = 520;
    const int T = 5;
    const int64_t ldx = I + 4, ldy = O + 3;
    const auto wt = io.randn(size_t(O * I), 0.05f), x = io.randn(size_t(T * ldx));
    auto dw = io.up(wt), dx = io.up(x);
    auto y = io.out(size_t(T * ldy));
    k3::gemm(k3::DevMat{dw.data(), false, O, I}, dx.as<float>(), ldx, T, y.as<float>(), ldy, io.s);
    const auto gy = io.down(y, size_t(T * ldy));
    vector<float> got;
    vector<double> ref;
    for (int t = 0; t < T; ++t)
      for (int64_t o = 0; o < O; ++o) {
        double s = 0;
        for (int64_t i = 0; i < I; ++i) s += double(wt[o * I + i]) * x[t * ldx + i];
        ref.push_back(s);
        got.push_back(gy[t * ldy + o]);
      }
    out.push_back(row("k3::gemm f32", "300x520 T=5", got, ref, 1e-5));
  }
  {  // embedding rows, BF16 and fp32 tables: exact widening
    const int64_t V = 1000, C = 640;
    const int T = 7;
    vector<uint16_t> tb(size_t(V * C));
    for (auto& b : tb) b = uint16_t(io.rng() & 0x7f7f);  // finite values of every exponent
    vector<float> tf(tb.size());
    for (size_t i = 0; i < tb.size(); ++i) tf[i] = bf16f(tb[i]);
    const vector<int32_t> ids = {0, 999, 5, 5, 123, 998, 1};
    auto dtb = io.up(tb), dtf = io.up(tf), dids = io.up(ids);
    vector<double> ref;
    for (int t = 0; t < T; ++t)
      for (int64_t j = 0; j < C; ++j) ref.push_back(tf[size_t(ids[t]) * C + j]);
    for (const bool bf : {true, false}) {
      auto y = io.out(size_t(T * C));
      k3::gather_rows(k3::DevMat{bf ? dtb.data() : dtf.data(), bf, V, C}, dids.as<int32_t>(), T, y.as<float>(), io.s);
      out.push_back(row(std::string("k3::gather_rows ") + (bf ? "bf16" : "f32"), "1000x640 T=7",
                        io.down(y, size_t(T * C)), ref, 0, "vs the table's rows, widened exactly"));
    }
  }
}

void kda(Io& io, vector<Result>& out) {
  {  // l2norm per head
    const int T = 3, heads = 5, d = 128;
    const float scale = 0.088f;
    const auto x = io.randn(size_t(T) * heads * d, 2.f);
    auto dx = io.up(x);
    k3::l2norm_heads(dx.as<float>(), T, heads, d, scale, io.s);
    vector<double> ref(x.size());
    for (int r = 0; r < T * heads; ++r) {
      double ss = 0;
      for (int i = 0; i < d; ++i) ss += double(x[r * d + i]) * x[r * d + i];
      for (int i = 0; i < d; ++i) ref[r * d + i] = x[r * d + i] / std::sqrt(ss + 1e-6) * scale;
    }
    out.push_back(row("k3::l2norm_heads", "T=3 heads=5 d=128", io.down(dx, x.size()), ref, 2e-6));
  }
  {  // gates
    const int T = 3, heads = 4, d = 128;
    const float lower = -5.f;
    const auto fb = io.randn(size_t(T) * heads * d), dtb = io.randn(size_t(heads) * d, 0.5f),
               alog = io.randn(heads, 0.5f), braw = io.randn(size_t(T) * heads, 2.f);
    auto dfb = io.up(fb), ddt = io.up(dtb), dal = io.up(alog), dbr = io.up(braw);
    auto la = io.out(fb.size()), beta = io.out(braw.size());
    k3::kda_gates(dfb.as<float>(), ddt.as<float>(), dal.as<float>(), dbr.as<float>(), T, heads, d, lower,
                  la.as<float>(), beta.as<float>(), io.s);
    vector<double> rla(fb.size()), rb(braw.size());
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h) {
        rb[t * heads + h] = sigmoid(braw[t * heads + h]);
        for (int i = 0; i < d; ++i) {
          const size_t c = size_t(h) * d + i;
          rla[size_t(t) * heads * d + c] =
              lower * sigmoid(std::exp(double(alog[h])) * (double(fb[size_t(t) * heads * d + c]) + dtb[c]));
        }
      }
    out.push_back(row("k3::kda_gates log_alpha", "T=3 heads=4 d=128", io.down(la, fb.size()), rla, 2e-6));
    out.push_back(row("k3::kda_gates beta", "T=3 heads=4", io.down(beta, braw.size()), rb, 2e-6));
  }
  {  // causal depthwise conv + SiLU over [window | raw], and the window after n rows
    const int T = 4, C = 300, K = 4, K1 = K - 1;
    const auto win = io.randn(size_t(3) * K1 * C), raw = io.randn(size_t(T) * 3 * C);
    const auto tq = io.randn(size_t(C) * K, 0.5f), tk = io.randn(size_t(C) * K, 0.5f),
               tv = io.randn(size_t(C) * K, 0.5f);
    auto dwin = io.up(win), draw = io.up(raw), dtq = io.up(tq), dtk = io.up(tk), dtv = io.up(tv);
    auto q = io.out(size_t(T) * C), k = io.out(size_t(T) * C), v = io.out(size_t(T) * C);
    k3::kda_conv(dwin.as<float>(), draw.as<float>(), T, C, K, dtq.as<float>(), dtk.as<float>(), dtv.as<float>(),
                 q.as<float>(), k.as<float>(), v.as<float>(), io.s);
    vector<float> got;
    vector<double> ref;
    const vector<float>* taps[3] = {&tq, &tk, &tv};
    const DeviceBuffer* outs[3] = {&q, &k, &v};
    for (int which = 0; which < 3; ++which) {
      const auto g = io.down(*outs[which], size_t(T) * C);
      got.insert(got.end(), g.begin(), g.end());
      for (int t = 0; t < T; ++t)
        for (int ch = 0; ch < C; ++ch) {
          double acc = 0;
          for (int j = 0; j < K; ++j) {
            const int src = t + j;
            const double xv =
                src < K1 ? win[(size_t(which) * K1 + src) * C + ch] : raw[(size_t(src - K1) * 3 + which) * C + ch];
            acc += double((*taps[which])[size_t(ch) * K + j]) * xv;
          }
          ref.push_back(acc * sigmoid(acc));
        }
    }
    out.push_back(row("k3::kda_conv", "T=4 C=300 K=4 (q, k, v)", got, ref, 2e-6));
    const int n = 2;
    auto nw = io.out(win.size());
    k3::kda_window_after(dwin.as<float>(), draw.as<float>(), n, C, K, nw.as<float>(), io.s);
    vector<double> rw(win.size());
    for (int which = 0; which < 3; ++which)
      for (int r = 0; r < K1; ++r)
        for (int ch = 0; ch < C; ++ch) {
          const int src = n + r;
          rw[(size_t(which) * K1 + r) * C + ch] =
              src < K1 ? win[(size_t(which) * K1 + src) * C + ch] : raw[(size_t(src - K1) * 3 + which) * C + ch];
        }
    out.push_back(row("k3::kda_window_after", "n=2 C=300 K=4", io.down(nw, win.size()), rw, 0, "vs the rows it keeps"));
  }
  {  // the recurrence: per head and value column, decay, delta rule, read out (K3's head shape)
    const int heads = 2, dk = 128, dv = 128, T = 5;
    auto S = io.randn(size_t(heads) * dk * dv, 0.1f);
    const auto q = io.randn(size_t(T) * heads * dk, 0.09f), k = io.randn(q.size(), 0.09f),
               v = io.randn(size_t(T) * heads * dv);
    vector<float> la(q.size()), beta(size_t(T) * heads);
    for (auto& x : la) x = float(-5 * sigmoid(io.randn(1)[0]));
    for (auto& x : beta) x = float(sigmoid(io.randn(1)[0]));
    auto dS = io.up(S), dq = io.up(q), dk_ = io.up(k), dv_ = io.up(v), dla = io.up(la), db = io.up(beta);
    auto o = io.out(v.size());
    k3::kda_recurrent(dS.as<float>(), heads, dk, dv, T, dq.as<float>(), dk_.as<float>(), dv_.as<float>(),
                      dla.as<float>(), db.as<float>(), o.as<float>(), io.s);
    vector<double> Sd = widen(S), ro(v.size());
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h)
        for (int j = 0; j < dv; ++j) {
          double* col = Sd.data() + size_t(h) * dk * dv + j;
          const size_t qk = (size_t(t) * heads + h) * dk;
          double kS = 0;
          for (int i = 0; i < dk; ++i) {
            col[size_t(i) * dv] *= std::exp(double(la[qk + i]));
            kS += k[qk + i] * col[size_t(i) * dv];
          }
          const double u = beta[t * heads + h] * (v[(size_t(t) * heads + h) * dv + j] - kS);
          double acc = 0;
          for (int i = 0; i < dk; ++i) {
            col[size_t(i) * dv] += k[qk + i] * u;
            acc += q[qk + i] * col[size_t(i) * dv];
          }
          ro[(size_t(t) * heads + h) * dv + j] = acc;
        }
    out.push_back(row("k3::kda_recurrent output", "heads=2 dk=dv=128 T=5", io.down(o, v.size()), ro, 1e-5));
    out.push_back(row("k3::kda_recurrent state", "heads=2 dk=dv=128 T=5", io.down(dS, S.size()), Sd, 1e-5));
  }
  {  // output RMSNorm per head times the sigmoid gate
    const int T = 3, heads = 4, d = 128;
    const float eps = 1e-5f;
    const auto o = io.randn(size_t(T) * heads * d, 3.f), gate = io.randn(o.size(), 2.f), w = io.randn(d, 0.5f);
    auto dox = io.up(o), dg = io.up(gate), dw = io.up(w);
    k3::kda_out_norm_gate(dox.as<float>(), dg.as<float>(), dw.as<float>(), T, heads, d, eps, io.s);
    vector<double> ref(o.size());
    for (int r = 0; r < T * heads; ++r) {
      double ss = 0;
      for (int i = 0; i < d; ++i) ss += double(o[r * d + i]) * o[r * d + i];
      const double inv = 1 / std::sqrt(ss / d + eps);
      for (int i = 0; i < d; ++i) ref[r * d + i] = o[r * d + i] * inv * w[i] * sigmoid(gate[r * d + i]);
    }
    out.push_back(row("k3::kda_out_norm_gate", "T=3 heads=4 d=128", io.down(dox, o.size()), ref, 2e-6));
  }
}

void attn_res(Io& io, vector<Result>& out) {
  const int T = 3, H = 7168, n = 5;
  const float eps = 1e-5f;
  vector<vector<float>> ent;
  vector<DeviceBuffer> de;
  k3::ResEntries re;
  for (int i = 0; i < n; ++i) {
    ent.push_back(io.randn(size_t(T) * H));
    de.push_back(io.up(ent.back()));
    re.p[re.n++] = de.back().as<float>();
  }
  const auto w = io.randn(H, 0.02f);
  auto dw = io.up(w);
  auto o = io.out(size_t(T) * H), scratch = io.out(size_t(T) * k3::kMaxResEntries);
  k3::attn_res_mix(re, dw.as<float>(), T, H, eps, scratch.as<float>(), o.as<float>(), io.s);
  vector<double> ref(size_t(T) * H);
  for (int t = 0; t < T; ++t) {
    vector<double> sc(n);
    for (int i = 0; i < n; ++i) {
      const float* v = &ent[i][size_t(t) * H];
      double ss = 0, d = 0;
      for (int j = 0; j < H; ++j) ss += double(v[j]) * v[j];
      const double inv = 1 / std::sqrt(ss / H + eps);
      for (int j = 0; j < H; ++j) d += v[j] * inv * w[j];
      sc[i] = d;
    }
    const double mx = *std::max_element(sc.begin(), sc.end());
    double sum = 0;
    for (auto& x : sc) sum += (x = std::exp(x - mx));
    for (int j = 0; j < H; ++j) {
      double acc = 0;
      for (int i = 0; i < n; ++i) acc += sc[i] / sum * ent[i][size_t(t) * H + j];
      ref[size_t(t) * H + j] = acc;
    }
  }
  out.push_back(row("k3::attn_res_mix", "T=3 H=7168 entries=5", io.down(o, ref.size()), ref, 1e-5));
}

void mla(Io& io, vector<Result>& out) {
  const int T = 3, nh = 4, N = 128, P = 64, Vd = 128, R = 512;
  const int64_t base = 37, max_ctx = 64;
  const float scale = 0.07f;
  vector<uint16_t> kvb(size_t(nh) * (N + Vd) * R);
  {
    const auto f = io.randn(kvb.size(), 0.05f);
    for (size_t i = 0; i < f.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &f[i], 4);
      kvb[i] = uint16_t(u >> 16);  // truncated to BF16: any BF16 values do
    }
  }
  auto W = [&](int64_t r, int64_t j) { return double(bf16f(kvb[size_t(r) * R + j])); };
  const auto q = io.randn(size_t(T) * nh * (N + P));
  auto dkvb = io.up(kvb), dq = io.up(q);
  const k3::DevMat kv{dkvb.data(), true, int64_t(nh) * (N + Vd), R};
  const std::string shape = "T=3 heads=4 N=128 P=64 V=128 R=512";

  auto qabs = io.out(size_t(T) * nh * R);
  k3::mla_absorb_q(dq.as<float>(), kv, T, nh, N, P, Vd, qabs.as<float>(), io.s);
  const auto gq = io.down(qabs, size_t(T) * nh * R);
  vector<double> rq(gq.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h)
      for (int j = 0; j < R; ++j) {
        double s = 0;
        for (int n = 0; n < N; ++n) s += q[(size_t(t) * nh + h) * (N + P) + n] * W(int64_t(h) * (N + Vd) + n, j);
        rq[(size_t(t) * nh + h) * R + j] = s;
      }
  out.push_back(row("k3::mla_absorb_q bf16", shape, gq, rq, 1e-5));

  // Attention over a cache of base + T rows [latent R | rope P]; the GPU's own qabs as the query.
  const auto cache = io.randn(size_t(max_ctx) * (R + P), 0.5f);
  auto dcache = io.up(cache);
  auto scores = io.out(size_t(T) * nh * max_ctx), olat = io.out(size_t(T) * nh * R);
  k3::mla_attend(qabs.as<float>(), dq.as<float>(), dcache.as<float>(), base, T, nh, N, R, P, scale, scores.as<float>(),
                 max_ctx, olat.as<float>(), io.s);
  const auto go = io.down(olat, size_t(T) * nh * R);
  vector<double> ro(go.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h) {
      const int64_t ctx = base + t + 1;
      vector<double> p(ctx);
      for (int64_t s = 0; s < ctx; ++s) {
        double d = 0;
        for (int j = 0; j < R; ++j) d += double(gq[(size_t(t) * nh + h) * R + j]) * cache[size_t(s) * (R + P) + j];
        for (int j = 0; j < P; ++j)
          d += double(q[(size_t(t) * nh + h) * (N + P) + N + j]) * cache[size_t(s) * (R + P) + R + j];
        p[s] = d * scale;
      }
      const double mx = *std::max_element(p.begin(), p.end());
      double sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int j = 0; j < R; ++j) {
        double acc = 0;
        for (int64_t s = 0; s < ctx; ++s) acc += p[s] / sum * cache[size_t(s) * (R + P) + j];
        ro[(size_t(t) * nh + h) * R + j] = acc;
      }
    }
  out.push_back(row("k3::mla_attend", shape + " context 38..40", go, ro, 1e-5));

  // The same pass with the context read on the device: the same bits.
  const vector<int64_t> at = {base};
  auto dat = io.up(at);
  auto olat2 = io.out(size_t(T) * nh * R);
  k3::mla_attend_at(qabs.as<float>(), dq.as<float>(), dcache.as<float>(), dat.as<int64_t>(), T, nh, N, R, P, scale,
                    scores.as<float>(), max_ctx, olat2.as<float>(), io.s);
  out.push_back(row("k3::mla_attend_at", shape + " context 38..40", io.down(olat2, go.size()), widen(go), 0,
                    "vs k3::mla_attend, bit for bit"));

  // Values of the GPU's olat.
  auto attn = io.out(size_t(T) * nh * Vd);
  k3::mla_value(olat.as<float>(), kv, T, nh, N, R, Vd, attn.as<float>(), io.s);
  vector<double> rv(size_t(T) * nh * Vd);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h)
      for (int v = 0; v < Vd; ++v) {
        double s = 0;
        for (int j = 0; j < R; ++j) s += W(int64_t(h) * (N + Vd) + N + v, j) * go[(size_t(t) * nh + h) * R + j];
        rv[(size_t(t) * nh + h) * Vd + v] = s;
      }
  out.push_back(row("k3::mla_value bf16", shape, io.down(attn, rv.size()), rv, 1e-5));

  // Rows written at a row index read on the device (the cache append of a graph-captured pass).
  const int64_t width = R + P;
  const auto src = io.randn(size_t(T) * width);
  auto dsrc = io.up(src);
  const vector<int64_t> at_row = {11};
  auto drow = io.up(at_row);
  auto dst = io.out(size_t(max_ctx) * width);
  dst.fill_byte(0);
  k3::rows_to_at(dsrc.as<float>(), T, width, dst.as<float>(), drow.as<int64_t>(), io.s);
  const auto gd = io.down(dst, size_t(max_ctx) * width);
  vector<double> rd(gd.size(), 0.0);
  for (int t = 0; t < T; ++t)
    for (int64_t j = 0; j < width; ++j) rd[size_t(11 + t) * width + j] = src[size_t(t) * width + j];
  out.push_back(row("k3::rows_to_at", "T=3 width=576 at row 11", gd, rd, 0, "vs the rows copied on the CPU"));
}

void router(Io& io, vector<Result>& out) {
  const int T = 8, E = 896, K = 16;
  const float scaling = 2.5f;
  auto logits = io.randn(size_t(T) * E, 2.f);
  const auto bias = io.randn(E, 0.05f);
  for (int e = 0; e < 4; ++e) logits[e] = logits[E + e] = 3.f;  // exact ties: the lower id wins
  auto dl = io.up(logits), db = io.up(bias);
  auto di = io.out(size_t(T) * K), dw = io.out(size_t(T) * K);
  k3::router_select(dl.as<float>(), db.as<float>(), T, E, K, true, scaling, di.as<int32_t>(), dw.as<float>(), io.s);
  const auto gi = io.down<int32_t>(di, size_t(T) * K);
  const auto gw = io.down(dw, size_t(T) * K);
  int id_diff = 0, near_ties = 0;
  vector<float> got;
  vector<double> ref;
  for (int t = 0; t < T; ++t) {
    // The GPU's own fp32 keys decide near-ties only: the reference sorts float64 keys.
    vector<double> s(E), key(E);
    for (int e = 0; e < E; ++e) {
      s[e] = sigmoid(logits[size_t(t) * E + e]);
      key[e] = s[e] + bias[e];
    }
    vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](int a, int b) { return key[a] != key[b] ? key[a] > key[b] : a < b; });
    std::sort(order.begin(), order.begin() + K);
    double sum = 0;
    for (int i = 0; i < K; ++i) sum += s[order[i]];
    bool swapped = false;
    for (int i = 0; i < K; ++i) {
      const int g = gi[size_t(t) * K + i];
      if (g == order[i]) continue;
      swapped = true;
      // A swap the fp32 sigmoid can cause: keys within a few ulps of each other.
      if (g >= 0 && g < E && std::fabs(key[g] - key[order[i]]) <= 4e-7 * std::fabs(key[order[i]])) ++near_ties;
      else ++id_diff;
    }
    if (swapped) continue;  // another chosen set renormalises differently: no weights to compare
    for (int i = 0; i < K; ++i) {
      got.push_back(gw[size_t(t) * K + i]);
      ref.push_back(s[order[i]] / sum * scaling);
    }
  }
  Result r = row("k3::router_select", "T=8 experts=896 top-16", got, ref, 2e-6, "weights vs float64 CPU reference");
  r.ok = r.ok && id_diff == 0 && !got.empty();
  r.detail += "; " + std::to_string(id_diff) + " chosen ids differ (" + std::to_string(near_ties) +
              " swaps within fp32 ties allowed)";
  out.push_back(r);

  // Batch invariance: row p alone == row p of T = 2, 4, 8.
  int bad = 0, checked = 0;
  vector<vector<int32_t>> ai(T);
  vector<vector<float>> aw(T);
  for (int p = 0; p < T; ++p) {
    k3::router_select(dl.as<float>() + size_t(p) * E, db.as<float>(), 1, E, K, true, scaling, di.as<int32_t>(),
                      dw.as<float>(), io.s);
    ai[p] = io.down<int32_t>(di, K);
    aw[p] = io.down(dw, K);
  }
  for (int Tn : {2, 4, 8}) {
    k3::router_select(dl.as<float>(), db.as<float>(), Tn, E, K, true, scaling, di.as<int32_t>(), dw.as<float>(), io.s);
    const auto bi = io.down<int32_t>(di, size_t(Tn) * K);
    const auto bw = io.down(dw, size_t(Tn) * K);
    for (int p = 0; p < Tn; ++p, ++checked)
      if (std::memcmp(bi.data() + size_t(p) * K, ai[p].data(), K * 4) ||
          std::memcmp(bw.data() + size_t(p) * K, aw[p].data(), K * 4))
        ++bad;
  }
  Result inv("k3::router_select batch invariance (T=2,4,8)", bad == 0 && checked > 0,
             std::to_string(checked) + " rows compared bit for bit, " + std::to_string(bad) + " differ",
             "k3::router_select", "T=1 vs T=2,4,8 experts=896 top-16");
  out.push_back(inv);
}

}  // namespace

std::vector<Result> k3_ops(uint64_t seed) {
  Io io(seed + 7);
  vector<Result> out;
  // A failing launch of one op must not hide the other ops' rows.
  auto guarded = [&](const char* what, void (*fn)(Io&, vector<Result>&)) {
    try {
      fn(io, out);
    } catch (const CudaError& e) {
      out.push_back(Result(std::string(what) + " ops", false, std::string("error: ") + e.what(), what));
    }
  };
  guarded("k3 elementwise", elementwise);
  guarded("k3 matrices", matrices);
  guarded("k3 KDA", kda);
  guarded("k3 AttnRes", attn_res);
  guarded("k3 MLA", mla);
  guarded("k3 router", router);
  return out;
}

}  // namespace deltafin::cuda::check
