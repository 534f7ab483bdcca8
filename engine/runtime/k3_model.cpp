#include "runtime/k3_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/thread_pool.h"
#include "runtime/kda_core.h"
#include "runtime/ops.h"
#include "store/expert_source_factory.h"

namespace deltafin {

std::unique_ptr<K3Model> K3Model::load(const std::string& root, Options opts) {
  auto m = std::unique_ptr<K3Model>(new K3Model());
  m->root_ = root;
  m->cfg_ = K3Config::load(root + "/config.json");
  m->ck_ = Checkpoint::open(root);
  m->w_ = K3Weights::bind(*m->ck_, m->cfg_);
  // The RAM tier's streaming buffer: two layers' working sets beside the cache budget.
  if (opts.store && opts.store->stream_slots < 0) opts.store->stream_slots = 2 * m->cfg_.top_k;
  if (opts.spine) {
    const auto& p = *opts.spine;
    const bool all_mapped =
        p.lm_head == SpineHome::Mapped &&
        std::all_of(p.layers.begin(), p.layers.end(), [](SpineHome h) { return h == SpineHome::Mapped; });
    if (!all_mapped) m->spine_ = std::make_unique<SpineStreamer>(*m->ck_, m->cfg_, m->w_, p, opts.say);
  }
  m->experts_ = opts.experts ? std::move(opts.experts)
                             : make_expert_source(*m->ck_, root, m->w_.experts, opts.store ? &*opts.store : nullptr);
  return m;
}

uint64_t K3Model::kv_bytes_per_token() const {
  uint64_t n = 0;
  for (int l = 0; l < cfg_.layers; ++l)
    if (cfg_.is_mla[l]) n += uint64_t(cfg_.mla_cache_width()) * sizeof(double);
  return n;
}

uint64_t K3Model::fixed_state_bytes() const {
  uint64_t n = 0;
  const uint64_t C = cfg_.kda_dim();
  for (int l = 0; l < cfg_.layers; ++l)
    if (!cfg_.is_mla[l])
      n += (uint64_t(cfg_.kda_heads) * cfg_.kda_head_dim * cfg_.kda_head_dim + 3 * (cfg_.conv_kernel - 1) * C) *
           sizeof(double);
  return n;
}

K3Session::K3Session(const K3Model& model) : m_(model) { reset(); }

void K3Session::reset() {
  const K3Config& c = m_.config();
  st_ = K3State{};
  st_.kda.resize(c.layers);
  st_.mla.resize(c.layers);
  for (int l = 0; l < c.layers; ++l) {
    if (c.is_mla[l]) continue;
    st_.kda[l].S.assign(size_t(c.kda_heads) * c.kda_head_dim * c.kda_head_dim, 0.0);
    st_.kda[l].conv.assign(size_t(3) * (c.conv_kernel - 1) * c.kda_dim(), 0.0);
  }
  staged_ = StagedPass{};
}

uint64_t K3Session::state_bytes() const {
  uint64_t n = 0;
  for (const auto& k : st_.kda) n += (k.S.size() + k.conv.size()) * sizeof(double);
  for (const auto& m : st_.mla) n += m.cache.size() * sizeof(double);
  return n;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// AttnRes mix of T-row entries: per row, softmax over entries of dot(V_i / rms(V_i), w), then
// the weighted sum of the raw entries, all in fp64.
void attn_res_mix(const std::vector<const double*>& entries, const std::vector<float>& w, int T, int H, double eps,
                  double* out) {
  const size_t n = entries.size();
  ThreadPool::global().parallel_for(static_cast<size_t>(T), [&](size_t t0, size_t t1) {
    std::vector<double> score(n), acc(H);
    for (size_t t = t0; t < t1; ++t) {
      for (size_t i = 0; i < n; ++i) {
        const double* v = entries[i] + t * H;
        const double inv = rms_inv64(v, H, eps);
        double s = 0;
        for (int j = 0; j < H; ++j) s += v[j] * double(w[j]);
        score[i] = s * inv;
      }
      double mx = score[0];
      for (size_t i = 1; i < n; ++i) mx = std::max(mx, score[i]);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        score[i] = std::exp(score[i] - mx);
        sum += score[i];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t i = 0; i < n; ++i) {
        const double p = score[i] / sum;
        const double* v = entries[i] + t * H;
        for (int j = 0; j < H; ++j) acc[j] += p * v[j];
      }
      std::copy(acc.begin(), acc.end(), out + t * H);
    }
  });
}

void rmsnorm_rows(const double* x, const std::vector<float>& w, int T, int n, double eps, double* out) {
  for (int t = 0; t < T; ++t) rmsnorm(x + size_t(t) * n, w.data(), n, eps, out + size_t(t) * n);
}

}  // namespace

void K3Session::begin(std::span<const int32_t> ids, const PassOptions& opts) {
  if (staged_.T > 0) throw Error("a pass is already staged", "commit or roll back before staging another");
  const K3Config& c = m_.config();
  const int T = static_cast<int>(ids.size());
  if (T == 0) throw Error("stage() called with no tokens");
  for (int32_t id : ids)
    if (id < 0 || id >= c.vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(c.vocab - 1) +
                  ")");
  if (opts.chunked_kda && opts.partial_commit)
    throw Error("chunked KDA cannot be combined with partial commits", "use the step form for verify passes");
  staged_.T = T;
  staged_.partial_ok = opts.partial_commit;
  staged_.kda.assign(c.layers, {});
  pass_ = opts;
  if (ForwardTrace* tr = opts.trace) {
    tr->layers.clear();
    tr->layers64.clear();
    tr->topk_ids.clear();
    tr->topk_weights.clear();
  }
}

void K3Session::stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) {
  begin(ids, opts);
  const K3Config& c = m_.config();
  const K3Weights& w = m_.weights();
  const int T = staged_.T, H = c.hidden;
  const auto t0 = std::chrono::steady_clock::now();
  const OpTotals ops0 = op_totals();
  const ThreadPool::Stats pool0 = ThreadPool::global().stats();
  ResidualStream rs;
  rs.T = T;
  rs.h.resize(size_t(T) * H);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < H; ++j) rs.h[size_t(t) * H + j] = w.embed.at(ids[t], j);
  try {
    layers(0, c.layers, rs);
  } catch (...) {
    rollback();
    throw;
  }
  finish_pass(rs, logits);
  if (T == 1) {
    ++phases_.passes;
    phases_.total += seconds_since(t0);
    const OpTotals d = op_totals() - ops0;
    phases_.dense_bytes += d.dense_bytes;
    phases_.mxfp4_bytes += d.mxfp4_bytes;
    phases_.dense_seconds += d.dense_seconds;
    phases_.mxfp4_seconds += d.mxfp4_seconds;
    const ThreadPool::Stats p = ThreadPool::global().stats() - pool0;
    phases_.pool_calls += p.calls;
    phases_.pool_wait_seconds += p.wait_seconds;
  }
}

void K3Session::begin_pass(std::span<const int32_t> ids, const PassOptions& opts) {
  if (opts.trace) throw Error("a pass run in parts takes no trace", "trace a pass run by one session");
  begin(ids, opts);
}

void K3Session::run_layers(int first, int last, ResidualStream& rs) {
  const K3Config& c = m_.config();
  if (staged_.T == 0) throw Error("run_layers() without a staged pass", "begin_pass first");
  if (first < 0 || last > c.layers || first > last || rs.T != staged_.T || rs.h.size() != size_t(rs.T) * c.hidden)
    throw Error("run_layers(" + std::to_string(first) + ", " + std::to_string(last) + ") does not fit the staged pass");
  if (rs.held_by)
    throw Error("run_layers: the residual stream is still in a GPU's memory",
                "bring it to the host first (stream_to_host)");
  layers(first, last, rs);
}

// Layers [first, last) of the staged pass over rs (stage() runs them all, begin_pass callers in parts).
void K3Session::layers(int first, int last, ResidualStream& rs) {
  const K3Config& c = m_.config();
  const K3Weights& w = m_.weights();
  const int T = rs.T;
  const int H = c.hidden;
  const PassOptions& opts = pass_;
  ForwardTrace* tr = opts.trace;
  const size_t TH = size_t(T) * H;
  std::vector<double>& h = rs.h;
  std::vector<std::vector<double>>& blocks = rs.blocks;
  std::vector<double> prefix(TH), x(TH), a(TH), mixed(TH), m(TH);
  bool have_prefix;
  std::vector<const double*> entries;
  // A streamed layer is held for the length of its computation, released on any exit.
  struct LayerLease {
    SpineStreamer* sp = nullptr;
    int layer = 0;
    ~LayerLease() {
      if (sp) sp->release(layer);
    }
  };
  SpineStreamer* sp = m_.spine();
  for (int l = first; l < last; ++l) {
    const bool streamed = sp && sp->streamed(l);
    const LayerWeights& L = streamed ? sp->acquire(l) : w.layers[l];
    LayerLease lease{streamed ? sp : nullptr, l};
    cur_ = &L;
    prefix = h;
    have_prefix = true;
    if (!blocks.empty()) {
      entries.clear();
      for (auto& b : blocks) entries.push_back(b.data());
      entries.push_back(prefix.data());
      attn_res_mix(entries, L.attn_res.w, T, H, c.rms_eps, h.data());
    }
    if (l % c.attn_res_block == 0) {
      blocks.push_back(prefix);
      have_prefix = false;
    }
    rmsnorm_rows(h.data(), L.input_norm, T, H, c.rms_eps, x.data());
    // A MoE layer's attention input applied to its own router guesses its experts better than the
    // earlier layers' inputs did (only this attention's output is missing): the refined guess
    // replaces theirs, and its reads run under this layer's attention. It is also the only guess for
    // a pass's first MoE layer.
    const auto ta = std::chrono::steady_clock::now();
    if (L.moe && m_.experts().prefetch_layers() > 0) predict_experts(l, x.data(), T);
    if (L.mla) attention_mla(l, x.data(), T, a.data());
    else attention_kda(l, x.data(), T, a.data(), opts);
    if (T == 1) phases_.attention += seconds_since(ta);
    if (have_prefix)
      for (size_t i = 0; i < TH; ++i) prefix[i] += a[i];
    else prefix = a;
    entries.clear();
    for (auto& b : blocks) entries.push_back(b.data());
    entries.push_back(prefix.data());
    attn_res_mix(entries, L.mlp_res.w, T, H, c.rms_eps, mixed.data());
    rmsnorm_rows(mixed.data(), L.post_attn_norm, T, H, c.rms_eps, x.data());
    const auto tm = std::chrono::steady_clock::now();
    if (L.moe) moe(l, x.data(), T, m.data(), tr && tr->routing ? tr : nullptr);
    else dense_mlp(L.dense, x.data(), T, m.data());
    if (T == 1) phases_.mlp += seconds_since(tm);
    for (size_t i = 0; i < TH; ++i) h[i] = prefix[i] + m[i];
    if (tr && tr->layer_out) {
      tr->layers.emplace_back(h.begin(), h.end());  // rounded to fp32 (drafters' taps, goldens)
      if (tr->layer_out64) tr->layers64.push_back(h);
    }
  }
}

void K3Session::finish_pass(const ResidualStream& rs, std::vector<float>& logits) {
  const K3Config& c = m_.config();
  if (staged_.T == 0 || rs.T != staged_.T || rs.h.size() != size_t(rs.T) * c.hidden)
    throw Error("finish_pass() does not fit the staged pass", "begin_pass and run every layer first");
  if (rs.held_by)
    throw Error("finish_pass: the residual stream is still in a GPU's memory",
                "bring it to the host first (stream_to_host)");
  // The output AttnRes mix, the final norm and lm_head; the logits are rounded once to fp32.
  const auto th = std::chrono::steady_clock::now();
  const K3Weights& w = m_.weights();
  const int T = rs.T, H = c.hidden;
  const size_t TH = size_t(T) * H;
  std::vector<double> mixed(TH), x(TH);
  std::vector<const double*> entries;
  for (auto& b : rs.blocks) entries.push_back(b.data());
  entries.push_back(rs.h.data());
  attn_res_mix(entries, w.output_res.w, T, H, c.rms_eps, mixed.data());
  for (int t = 0; t < T; ++t) m_.experts().end_token();
  const int first = pass_.all_logits ? 0 : T - 1;
  const int rows = T - first;
  rmsnorm_rows(mixed.data() + size_t(first) * H, w.final_norm, rows, H, c.rms_eps, x.data());
  std::vector<double> out(size_t(rows) * c.vocab);
  SpineStreamer* sp = m_.spine();
  if (sp && sp->lm_head_streamed()) {
    const Mat& head = sp->acquire_lm_head();
    struct HeadLease {
      SpineStreamer* sp;
      ~HeadLease() { sp->release_lm_head(); }
    } head_lease{sp};
    matmul(head, x.data(), rows, out.data());
  } else {
    matmul(w.lm_head, x.data(), rows, out.data());
  }
  logits.assign(out.begin(), out.end());  // each logit rounded once to fp32
  if (rs.T == 1) phases_.head += seconds_since(th);
}

void K3Session::commit(int n) {
  const K3Config& c = m_.config();
  const int T = staged_.T;
  if (T == 0) throw Error("commit() without a staged pass");
  if (n < 0 || n > T) throw Error("commit(" + std::to_string(n) + ") outside 0.." + std::to_string(T));
  if (n < T && !staged_.partial_ok)
    throw Error("partial commit of a pass staged without partial_commit", "stage verify passes with partial_commit");
  const int K1 = c.conv_kernel - 1, C = c.kda_dim();
  for (int l = 0; l < c.layers; ++l) {
    if (c.is_mla[l]) {
      st_.mla[l].cache.resize(size_t(st_.n_past + n) * c.mla_cache_width());
      continue;
    }
    if (n == T) continue;  // the pass already left the final state in place
    KdaStagedRows& r = staged_.kda[l];
    if (r.raw.empty()) continue;  // a layer another session ran (a pass in parts)
    KdaLayerState& s = st_.kda[l];
    s.S = r.S0;
    if (n > 0) {
      const KdaShape shape{c.kda_heads, c.kda_head_dim, c.kda_head_dim};
      std::vector<double> o(size_t(n) * C);
      kda_recurrent(shape, s.S.data(), n, r.q.data(), r.k.data(), r.v.data(), r.log_alpha.data(), r.beta.data(),
                    o.data());
    }
    // Conv window after n rows: the last K-1 of [old window, first n raw inputs].
    s.conv = r.conv0;
    for (int which = 0; which < 3; ++which) {
      std::vector<double> ext(size_t(K1 + n) * C);
      std::memcpy(ext.data(), r.conv0.data() + size_t(which) * K1 * C, size_t(K1) * C * sizeof(double));
      for (int t = 0; t < n; ++t)
        std::memcpy(ext.data() + size_t(K1 + t) * C, r.raw.data() + (size_t(t) * 3 + which) * C,
                    size_t(C) * sizeof(double));
      std::memcpy(s.conv.data() + size_t(which) * K1 * C, ext.data() + size_t(n) * C, size_t(K1) * C * sizeof(double));
    }
  }
  st_.n_past += n;
  staged_ = StagedPass{};
}

void K3Session::rollback() {
  if (staged_.T == 0) return;
  if (!staged_.partial_ok) {
    // Without a snapshot the KDA state cannot be restored: the session is reset.
    reset();
    return;
  }
  commit(0);
}

}  // namespace deltafin

namespace deltafin {

void K3Session::load_state(K3State state) {
  if (staged_.T > 0) throw Error("cannot load a state while a pass is staged", "commit or roll back first");
  check_state_fits(m_.config(), state);
  st_ = std::move(state);
  staged_ = StagedPass{};
}

K3State K3Session::save_state() const {
  if (staged_.T > 0) throw Error("cannot save the state while a pass is staged", "commit or roll back first");
  return st_;
}

namespace {

Error state_misfit(const std::string& what) {
  return Error("session state does not fit this model: " + what, "discard the snapshot; it was made for another model");
}

}  // namespace

void check_layer_state_fits(const K3Config& c, int l, const KdaLayerState& kda, const MlaLayerState& mla,
                            int64_t n_past) {
  if (l < 0 || l >= c.layers) throw state_misfit("no layer " + std::to_string(l));
  const std::string at = " of layer " + std::to_string(l);
  if (c.is_mla[l]) {
    if (!kda.S.empty() || !kda.conv.empty()) throw state_misfit("KDA state" + at);
    if (mla.cache.size() != size_t(n_past) * c.mla_cache_width()) throw state_misfit("MLA cache size" + at);
  } else {
    const size_t S = size_t(c.kda_heads) * c.kda_head_dim * c.kda_head_dim;
    const size_t conv = size_t(3) * (c.conv_kernel - 1) * c.kda_dim();
    if (kda.S.size() != S || kda.conv.size() != conv) throw state_misfit("KDA state size" + at);
    if (!mla.cache.empty()) throw state_misfit("MLA cache" + at);
  }
}

void check_state_fits(const K3Config& c, const K3State& state) {
  if (state.n_past < 0) throw state_misfit("negative token count");
  if (state.kda.size() != size_t(c.layers) || state.mla.size() != size_t(c.layers)) throw state_misfit("layer count");
  for (int l = 0; l < c.layers; ++l) check_layer_state_fits(c, l, state.kda[l], state.mla[l], state.n_past);
}

void K3Session::export_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) {
  if (staged_.T > 0) throw Error("cannot move a layer's state while a pass is staged", "commit or roll back first");
  const K3Config& c = m_.config();
  if (layer < 0 || layer >= c.layers) throw Error("export_layer: no layer " + std::to_string(layer));
  // Only the part the layer has is swapped: the placeholder left behind keeps the other part empty.
  if (c.is_mla[layer]) {
    std::swap(st_.mla[size_t(layer)], mla);
    kda.S.clear();
    kda.conv.clear();
  } else {
    std::swap(st_.kda[size_t(layer)], kda);
    mla.cache.clear();
  }
}

void K3Session::import_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) {
  if (staged_.T > 0) throw Error("cannot move a layer's state while a pass is staged", "commit or roll back first");
  const K3Config& c = m_.config();
  check_layer_state_fits(c, layer, kda, mla, st_.n_past);
  if (c.is_mla[layer]) std::swap(st_.mla[size_t(layer)], mla);
  else std::swap(st_.kda[size_t(layer)], kda);
}

}  // namespace deltafin
