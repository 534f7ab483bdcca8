// The float64 K3 forward (K3-SPEC.md section 3), one token at a time, in plain loops.
#include "reference/k3_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "base/error.h"
#include "runtime/k3_model.h"

namespace deltafin::reference {

namespace {

using Vec = std::vector<double>;

double weight_at(const Mat& w, int64_t r, int64_t c) {
  const auto* p = static_cast<const uint8_t*>(w.data);
  if (w.dtype == DType::F32) {
    float f;
    std::memcpy(&f, p + 4 * (r * w.cols + c), 4);
    return f;
  }
  uint16_t v;
  std::memcpy(&v, p + 2 * (r * w.cols + c), 2);
  const uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// y = W x for a BF16/F32 matrix [rows][cols].
Vec matvec(const Mat& w, const Vec& x) {
  if (int64_t(x.size()) != w.cols) throw Error("reference: input width does not match a weight matrix");
  Vec y(w.rows);
  for (int64_t r = 0; r < w.rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < w.cols; ++c) s += weight_at(w, r, c) * x[c];
    y[r] = s;
  }
  return y;
}

// MXFP4 value of column c in row r: E2M1 code (low nibble = even column) times 2^(scale - 127).
double mxfp4_at(const uint8_t* packed, const uint8_t* scale, int64_t cols, int64_t r, int64_t c) {
  static const double kE2M1[8] = {0, .5, 1, 1.5, 2, 3, 4, 6};
  const uint8_t byte = packed[r * (cols / 2) + c / 2];
  const int code = c % 2 == 0 ? byte & 15 : byte >> 4;
  const uint8_t s = scale[r * (cols / 32) + c / 32];
  if (s == 255) throw Error("reference: an MXFP4 scale byte is 255 (NaN)");
  const double v = kE2M1[code & 7] * std::ldexp(1.0, int(s) - 127);
  return code & 8 ? -v : v;
}

Vec matvec_mxfp4(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, const Vec& x) {
  Vec y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += mxfp4_at(packed, scale, cols, r, c) * x[c];
    y[r] = s;
  }
  return y;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// x * rsqrt(mean(x^2) + eps) * w over n values starting at x.
void rmsnorm(const double* x, const std::vector<float>& w, int64_t n, double eps, double* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / double(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * double(w[i]);
}

Vec rmsnorm(const Vec& x, const std::vector<float>& w, double eps) {
  Vec out(x.size());
  rmsnorm(x.data(), w, int64_t(x.size()), eps, out.data());
  return out;
}

// SiTU GLU: beta*tanh(g/beta)*sigmoid(g) * lbeta*tanh(u/lbeta).
Vec situ(const Vec& g, const Vec& u, double beta, double lbeta) {
  Vec out(g.size());
  for (size_t i = 0; i < g.size(); ++i)
    out[i] = beta * std::tanh(g[i] / beta) * sigmoid(g[i]) * (lbeta * std::tanh(u[i] / lbeta));
  return out;
}

// AttnRes mix: softmax over entries of dot(V_i / rms(V_i), w), then the weighted sum of the raw V_i.
Vec mix(const std::vector<const Vec*>& entries, const std::vector<float>& w, double eps) {
  const size_t n = entries.size(), H = w.size();
  Vec score(n);
  for (size_t i = 0; i < n; ++i) {
    const Vec& v = *entries[i];
    double ss = 0;
    for (size_t j = 0; j < H; ++j) ss += v[j] * v[j];
    const double inv = 1.0 / std::sqrt(ss / double(H) + eps);
    double s = 0;
    for (size_t j = 0; j < H; ++j) s += v[j] * inv * double(w[j]);
    score[i] = s;
  }
  const double mx = *std::max_element(score.begin(), score.end());
  double sum = 0;
  for (double& s : score) sum += (s = std::exp(s - mx));
  Vec out(H, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < H; ++j) out[j] += score[i] / sum * (*entries[i])[j];
  return out;
}

}  // namespace

struct K3Reference::State {
  struct Kda {
    Vec S;       // [heads][dk][dv]
    Vec window;  // [3][K-1][C]: the last K-1 raw q, k, v inputs, oldest first
  };
  struct Mla {
    std::vector<Vec> k_nope, k_rope, v;  // per position: [heads][nope], [rope], [heads][v_head]
  };
  std::vector<Kda> kda;
  std::vector<Mla> mla;
  int64_t n_past = 0;
};

K3Reference::K3Reference(const K3Model& model) : m_(model), st_(new State) {
  const K3Config& c = m_.config();
  st_->kda.resize(c.layers);
  st_->mla.resize(c.layers);
  for (int l = 0; l < c.layers; ++l)
    if (!c.is_mla[l]) {
      st_->kda[l].S.assign(size_t(c.kda_heads) * c.kda_head_dim * c.kda_head_dim, 0.0);
      st_->kda[l].window.assign(size_t(3) * (c.conv_kernel - 1) * c.kda_dim(), 0.0);
    }
}

K3Reference::~K3Reference() { delete st_; }

int64_t K3Reference::n_past() const { return st_->n_past; }

namespace {

Vec kda(const K3Config& c, const KdaWeights& w, Vec& S, Vec& window, const Vec& x) {
  const int C = c.kda_dim(), K = c.conv_kernel, K1 = K - 1, nh = c.kda_heads, d = c.kda_head_dim;
  const Vec raw[3] = {matvec(w.q_proj, x), matvec(w.k_proj, x), matvec(w.v_proj, x)};
  const std::vector<float>* conv_w[3] = {&w.q_conv, &w.k_conv, &w.v_conv};
  // Causal depthwise conv over [K-1 previous inputs | this input], oldest tap first, then SiLU.
  Vec act[3];
  for (int which = 0; which < 3; ++which) {
    double* win = &window[size_t(which) * K1 * C];
    act[which].resize(C);
    for (int ch = 0; ch < C; ++ch) {
      double s = 0;
      for (int j = 0; j < K; ++j) {
        const double in = j < K1 ? win[size_t(j) * C + ch] : raw[which][ch];
        s += double((*conv_w[which])[size_t(ch) * K + j]) * in;
      }
      act[which][ch] = s * sigmoid(s);
    }
    for (int j = 0; j + 1 < K1; ++j)
      for (int ch = 0; ch < C; ++ch) win[size_t(j) * C + ch] = win[size_t(j + 1) * C + ch];
    if (K1 > 0)
      for (int ch = 0; ch < C; ++ch) win[size_t(K1 - 1) * C + ch] = raw[which][ch];
  }
  Vec& q = act[0];
  Vec& k = act[1];
  const Vec& v = act[2];
  // Per-head L2 normalisation of q and k; q scaled by d^-1/2.
  for (int h = 0; h < nh; ++h)
    for (Vec* t : {&q, &k}) {
      double ss = 0;
      for (int i = 0; i < d; ++i) ss += (*t)[h * d + i] * (*t)[h * d + i];
      const double inv = 1.0 / std::sqrt(ss + 1e-6);
      const double scale = t == &q ? 1.0 / std::sqrt(double(d)) : 1.0;
      for (int i = 0; i < d; ++i) (*t)[h * d + i] = (*t)[h * d + i] * inv * scale;
    }
  const Vec z = matvec(w.f_b, matvec(w.f_a, x));
  const Vec b = matvec(w.b_proj, x);
  const Vec gate = matvec(w.g_proj, x);
  Vec o(C);
  for (int h = 0; h < nh; ++h) {
    double* Sh = &S[size_t(h) * d * d];  // [key i][value j]
    const double ea = std::exp(double(w.a_log[h]));
    for (int i = 0; i < d; ++i) {
      const double zi = z[h * d + i] + double(w.dt_bias[h * d + i]);
      const double alpha = std::exp(double(c.gate_lower_bound) * sigmoid(ea * zi));
      for (int j = 0; j < d; ++j) Sh[i * d + j] *= alpha;
    }
    const double beta = sigmoid(b[h]);
    Vec u(d);
    for (int j = 0; j < d; ++j) {
      double ks = 0;
      for (int i = 0; i < d; ++i) ks += k[h * d + i] * Sh[i * d + j];
      u[j] = beta * (v[h * d + j] - ks);
    }
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) Sh[i * d + j] += k[h * d + i] * u[j];
    for (int j = 0; j < d; ++j) {
      double s = 0;
      for (int i = 0; i < d; ++i) s += q[h * d + i] * Sh[i * d + j];
      o[h * d + j] = s;
    }
    rmsnorm(&o[size_t(h) * d], w.o_norm, d, c.rms_eps, &o[size_t(h) * d]);
    for (int j = 0; j < d; ++j) o[h * d + j] *= sigmoid(gate[h * d + j]);
  }
  return matvec(w.o_proj, o);
}

// NoPE MLA with keys and values expanded per head (the spec's form, not the engine's absorbed one).
Vec mla(const K3Config& c, const MlaWeights& w, std::vector<Vec>& k_nope, std::vector<Vec>& k_rope,
        std::vector<Vec>& vals, const Vec& x) {
  const int nh = c.mla_heads, R = c.kv_lora_rank, P = c.qk_rope, N = c.qk_nope, Vd = c.v_head;
  const Vec q = matvec(w.q_b_proj, rmsnorm(matvec(w.q_a_proj, x), w.q_a_norm, c.rms_eps));
  const Vec ckv = matvec(w.kv_a_proj, x);
  Vec lat(R);
  rmsnorm(ckv.data(), w.kv_a_norm, R, c.rms_eps, lat.data());
  const Vec kv = matvec(w.kv_b_proj, lat);  // per head [N key | Vd value]
  Vec kn(size_t(nh) * N), vv(size_t(nh) * Vd);
  for (int h = 0; h < nh; ++h) {
    for (int i = 0; i < N; ++i) kn[h * N + i] = kv[size_t(h) * (N + Vd) + i];
    for (int i = 0; i < Vd; ++i) vv[h * Vd + i] = kv[size_t(h) * (N + Vd) + N + i];
  }
  k_nope.push_back(std::move(kn));
  k_rope.emplace_back(ckv.begin() + R, ckv.end());
  vals.push_back(std::move(vv));
  const size_t n = k_nope.size();
  const double scale = 1.0 / std::sqrt(double(N + P));
  Vec attn(size_t(nh) * Vd, 0.0), score(n);
  for (int h = 0; h < nh; ++h) {
    const double* qh = &q[size_t(h) * (N + P)];
    for (size_t s = 0; s < n; ++s) {
      double a = 0;
      for (int i = 0; i < N; ++i) a += qh[i] * k_nope[s][h * N + i];
      for (int i = 0; i < P; ++i) a += qh[N + i] * k_rope[s][i];
      score[s] = a * scale;
    }
    const double mx = *std::max_element(score.begin(), score.end());
    double sum = 0;
    for (double& s : score) sum += (s = std::exp(s - mx));
    for (size_t s = 0; s < n; ++s)
      for (int i = 0; i < Vd; ++i) attn[h * Vd + i] += score[s] / sum * vals[s][h * Vd + i];
  }
  if (c.mla_output_gate) {
    const Vec g = matvec(w.g_proj, x);
    for (size_t i = 0; i < attn.size(); ++i) attn[i] *= sigmoid(g[i]);
  }
  return matvec(w.o_proj, attn);
}

Vec dense_mlp(const K3Config& c, const DenseMlpWeights& w, const Vec& x) {
  return matvec(w.down, situ(matvec(w.gate, x), matvec(w.up, x), c.situ_beta, c.situ_linear_beta));
}

Vec moe(const K3Model& m, int layer, const Vec& x) {
  const K3Config& c = m.config();
  const MoeWeights& w = m.weights().layers[layer].moe_w;
  const int E = c.experts, k = c.top_k, Z = c.latent, I = c.moe_intermediate;
  const Vec logits = matvec(w.router, x);
  Vec s(E), key(E);
  for (int e = 0; e < E; ++e) {
    s[e] = sigmoid(logits[e]);
    key[e] = s[e] + double(w.router_bias[e]);
  }
  std::vector<int> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[a] > key[b]; });
  order.resize(k);
  std::sort(order.begin(), order.end());
  double sum = 0;
  for (int e : order) sum += s[e];
  std::vector<ExpertView> views;
  m.experts().acquire(layer, order, views);
  const Vec z = matvec(w.latent_down, x);
  Vec y(Z, 0.0);
  for (int i = 0; i < k; ++i) {
    const ExpertView& v = views[i];
    const Vec g = matvec_mxfp4(v.w1_packed, v.w1_scale, I, Z, z);
    const Vec u = matvec_mxfp4(v.w3_packed, v.w3_scale, I, Z, z);
    const Vec d = matvec_mxfp4(v.w2_packed, v.w2_scale, Z, I, situ(g, u, c.situ_beta, c.situ_linear_beta));
    const double wt = (c.renormalize ? s[order[i]] / (sum + 1e-20) : s[order[i]]) * double(c.routed_scaling);
    for (int j = 0; j < Z; ++j) y[j] += wt * d[j];
  }
  if (c.latent_norm) y = rmsnorm(y, w.latent_norm, c.rms_eps);
  Vec out = matvec(w.latent_up, y);
  if (w.has_shared) {
    const Vec sh = dense_mlp(c, w.shared, x);
    for (size_t i = 0; i < out.size(); ++i) out[i] += sh[i];
  }
  return out;
}

}  // namespace

std::vector<double> K3Reference::step(int32_t id, std::vector<std::vector<double>>* layer_out) {
  const K3Config& c = m_.config();
  const K3Weights& w = m_.weights();
  if (id < 0 || id >= c.vocab) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
  const int H = c.hidden;
  const double eps = c.rms_eps;
  Vec h(H);
  for (int j = 0; j < H; ++j) h[j] = weight_at(w.embed, id, j);
  if (layer_out) layer_out->clear();

  std::vector<Vec> blocks;
  auto entries = [&](const Vec& last) {
    std::vector<const Vec*> e;
    for (const Vec& b : blocks) e.push_back(&b);
    e.push_back(&last);
    return e;
  };
  for (int l = 0; l < c.layers; ++l) {
    const LayerWeights& L = w.layers[l];
    Vec prefix = h;
    bool have_prefix = true;
    if (!blocks.empty()) h = mix(entries(prefix), L.attn_res.w, eps);
    if (l % c.attn_res_block == 0) {
      blocks.push_back(prefix);
      have_prefix = false;
    }
    const Vec x = rmsnorm(h, L.input_norm, eps);
    Vec a;
    if (L.mla) {
      auto& s = st_->mla[l];
      a = mla(c, L.mla_w, s.k_nope, s.k_rope, s.v, x);
    } else {
      a = kda(c, L.kda, st_->kda[l].S, st_->kda[l].window, x);
    }
    if (have_prefix)
      for (int j = 0; j < H; ++j) prefix[j] += a[j];
    else prefix = a;
    const Vec xm = rmsnorm(mix(entries(prefix), L.mlp_res.w, eps), L.post_attn_norm, eps);
    const Vec mo = L.moe ? moe(m_, l, xm) : dense_mlp(c, L.dense, xm);
    for (int j = 0; j < H; ++j) h[j] = prefix[j] + mo[j];
    if (layer_out) layer_out->push_back(h);
  }
  ++st_->n_past;
  return matvec(w.lm_head, rmsnorm(mix(entries(h), w.output_res.w, eps), w.final_norm, eps));
}

std::vector<double> forward(const K3Model& model, std::span<const int32_t> ids,
                            std::vector<std::vector<double>>* layer_out) {
  const K3Config& c = model.config();
  const size_t T = ids.size(), H = size_t(c.hidden);
  K3Reference r(model);
  std::vector<double> logits;
  logits.reserve(T * size_t(c.vocab));
  if (layer_out) layer_out->assign(c.layers, std::vector<double>(T * H));
  std::vector<std::vector<double>> layers;
  for (size_t t = 0; t < T; ++t) {
    const auto row = r.step(ids[t], layer_out ? &layers : nullptr);
    logits.insert(logits.end(), row.begin(), row.end());
    if (layer_out)
      for (int l = 0; l < c.layers; ++l) std::copy(layers[l].begin(), layers[l].end(), (*layer_out)[l].begin() + t * H);
  }
  return logits;
}

double rel_l2(const double* x, const double* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (x[i] - ref[i]) * (x[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

double rel_l2(const float* x, const double* ref, size_t n) {
  std::vector<double> d(x, x + n);
  return rel_l2(d.data(), ref, n);
}

int64_t argmax(const double* x, int64_t n) { return std::max_element(x, x + n) - x; }

double top2_margin(const double* x, int64_t n) {
  if (n < 2) return 0;
  double a = -INFINITY, b = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > a) {
      b = a;
      a = x[i];
    } else if (x[i] > b) {
      b = x[i];
    }
  }
  return a - b;
}

}  // namespace deltafin::reference
