#include "cuda_k3_checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "base/error.h"
#include "cuda/cuda_support.h"
#include "support/worst_error.h"
#include "cuda/k3_cuda_model.h"
#include "cuda/k3/k3_ops.h"
#include "support/golden_tensors.h"
#include "runtime/generate.h"
#include "runtime/kda_core.h"
#include "runtime/moe_router.h"
#include "runtime/ops.h"

namespace deltafin::cuda::check {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <class T>  // float (logits, layer streams) or double (the fp64 ops)
double rel(const T* a, const T* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}
double mad(const float* a, const float* ref, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = deltafin::test::worst_of(m, std::fabs(double(a[i]) - ref[i]));
  return m;
}
std::string fmt(double v) {
  std::ostringstream o;
  o.precision(3);
  o << v;
  return o.str();
}

}  // namespace

std::vector<Result> k3_goldens(const std::string& dir) {
  std::vector<Result> out;
  auto host = K3Model::load(dir);
  const K3Config& c = host->config();
  CudaK3Model::Options mo;
  mo.max_rows = 128;  // the longest golden prompt (65 ids) in one pass
  CudaK3Model model(*host, mo);
  const test::LoadedTensors g = test::load_tensors(dir + "/golden.safetensors");
  const auto meta = nlohmann::json::parse(read_all(dir + "/golden.json"));
  const int V = c.vocab, H = c.hidden;

  for (const auto& p : meta["prompts"]) {
    const int index = p["index"].get<int>();
    const std::string P = "prompt." + std::to_string(index) + ".";
    auto ids64 = g.i64(P + "ids");
    std::vector<int32_t> ids(ids64.begin(), ids64.end());
    const int T = int(ids.size());
    CudaK3Session s(model);
    ForwardTrace tr;
    tr.layer_out = tr.routing = true;
    PassOptions o;
    o.trace = &tr;
    std::vector<float> logits;
    s.stage(ids, logits, o);
    s.commit(T);
    const auto want = g.f32(P + "logits");
    Result r{"golden logits, prompt " + std::to_string(index) + " (T=" + std::to_string(T) + ")", false, ""};
    const double rl = rel(logits.data(), want.data(), want.size()), ma = mad(logits.data(), want.data(), want.size());
    int argmax_checked = 0, argmax_bad = 0;
    for (int t = 0; t < T; ++t) {
      const float* w = &want[size_t(t) * V];
      std::vector<float> row(w, w + V);
      std::sort(row.begin(), row.end(), std::greater<float>());
      if (row[0] - row[1] <= 2e-3f) continue;
      ++argmax_checked;
      const float* gl = &logits[size_t(t) * V];
      if (std::max_element(gl, gl + V) - gl != std::max_element(w, w + V) - w) ++argmax_bad;
    }
    r.ok = logits.size() == want.size() && rl <= 5e-4 && ma <= 5e-3 && argmax_bad == 0;
    r.detail = "rel_l2 " + fmt(rl) + " (<= 5e-4), max abs " + fmt(ma) + " (<= 5e-3), argmax equal at " +
               std::to_string(argmax_checked - argmax_bad) + "/" + std::to_string(argmax_checked) + " clear rows";
    out.push_back(r);

    const auto layers = g.f32(P + "layer_out");
    double worst = 0;
    for (size_t l = 0; l < tr.layers.size(); ++l)
      worst = deltafin::test::worst_of(worst, rel(tr.layers[l].data(), &layers[l * T * H], size_t(T) * H));
    out.push_back({"golden layer streams, prompt " + std::to_string(index),
                   tr.layers.size() == size_t(c.layers) && worst <= 5e-4, "worst rel_l2 " + fmt(worst) + " (<= 5e-4)"});

    const auto ids_want = g.i64(P + "topk_ids");
    const auto w_want = g.f32(P + "topk_weights");
    const int k = c.top_k;
    bool same = int(tr.topk_ids.size()) == c.moe_layers();
    double wmax = 0;
    for (int l = 0; same && l < c.moe_layers(); ++l)
      for (int i = 0; i < T * k; ++i) {
        same = same && int64_t(tr.topk_ids[l][i]) == ids_want[size_t(l) * T * k + i];
        wmax = deltafin::test::worst_of(wmax, std::fabs(double(tr.topk_weights[l][i]) - w_want[size_t(l) * T * k + i]));
      }
    out.push_back({"golden routing, prompt " + std::to_string(index), same && wmax <= 1e-4,
                   std::string(same ? "experts identical" : "experts DIFFER") + ", max weight diff " + fmt(wmax)});
  }

  for (const auto& gr : meta["greedy"]) {
    const int index = gr["index"].get<int>();
    const std::string G = "greedy." + std::to_string(index) + ".";
    auto p64 = g.i64(G + "prompt_ids");
    const auto want = g.i64(G + "ids");
    const auto margins = g.f32(G + "margins");
    std::vector<int32_t> prompt(p64.begin(), p64.end());
    CudaK3Session s(model);
    const auto gpu = s.greedy(prompt, int(want.size()));
    K3Session cs(*host);
    GenerateOptions go;
    go.max_new = int(want.size());
    const auto cpu = generate(cs, prompt, go).ids;
    size_t clear = 0;
    while (clear < want.size() && margins[clear] > 2e-3f) ++clear;
    bool golden_ok = gpu.size() == want.size(), cpu_ok = gpu.size() == cpu.size();
    for (size_t i = 0; i < clear && golden_ok; ++i) golden_ok = gpu[i] == want[i];
    size_t agree = 0;
    while (agree < std::min(gpu.size(), cpu.size()) && gpu[agree] == cpu[agree]) ++agree;
    cpu_ok = cpu_ok && agree >= clear;
    out.push_back({"greedy golden " + std::to_string(index), golden_ok,
                   "GPU ids equal the golden over the " + std::to_string(clear) + " clear-margin steps of " +
                       std::to_string(want.size())});
    out.push_back({"greedy GPU == CPU " + std::to_string(index), cpu_ok,
                   "GPU and CPU ids agree on the first " + std::to_string(agree) + " of " + std::to_string(gpu.size()) +
                       " (required: the " + std::to_string(clear) + " clear-margin steps)"});
  }
  return out;
}

std::vector<Result> k3_transactions(const std::string& dir, uint64_t seed) {
  std::vector<Result> out;
  auto host = K3Model::load(dir);
  const K3Config& c = host->config();
  CudaK3Model::Options mo;
  mo.max_rows = 8;
  CudaK3Model model(*host, mo);
  std::mt19937_64 rng(seed);
  auto ids = [&](int n) {
    std::vector<int32_t> v(n);
    for (auto& x : v) x = int32_t(rng() % uint64_t(c.vocab));
    return v;
  };
  const auto context = ids(11), rows = ids(8), next = ids(1);
  const size_t V = c.vocab;
  PassOptions all;
  all.partial_commit = true;

  // One 8-row pass vs eight 1-row passes.
  CudaK3Session a(model), b(model);
  a.prefill(context);
  b.prefill(context);
  std::vector<float> la, lb;
  a.stage(rows, la, all);
  bool same = la.size() == 8 * V;
  for (int t = 0; t < 8 && same; ++t) {
    b.stage(std::span<const int32_t>(&rows[t], 1), lb, all);
    b.commit(1);
    same = std::memcmp(lb.data(), &la[t * V], V * 4) == 0;
    if (!same) out.push_back({"batch invariance", false, "row " + std::to_string(t) + " differs from its 1-row pass"});
  }
  if (same) out.push_back({"batch invariance", true, "8 rows of one pass bit-identical to 8 one-row passes"});

  // commit(3) then a token == a session that ran only those 3 rows.
  a.commit(3);
  CudaK3Session ref(model);
  ref.prefill(context);
  std::vector<float> lr;
  ref.stage(std::span<const int32_t>(rows.data(), 3), lr, all);
  ref.commit(3);
  a.stage(next, la, all);
  a.commit(1);
  ref.stage(next, lr, all);
  ref.commit(1);
  out.push_back({"partial commit", la == lr && a.n_past() == ref.n_past(),
                 "commit(3) of an 8-row pass then one token: logits " +
                     std::string(la == lr ? "bit-identical" : "DIFFER") +
                     " to a session that staged only those 3 rows"});

  // rollback == never staged.
  a.stage(rows, la, all);
  a.rollback();
  a.stage(next, la, all);
  a.commit(1);
  ref.stage(next, lr, all);
  ref.commit(1);
  out.push_back({"rollback", la == lr,
                 std::string("after rollback the next token's logits are ") +
                     (la == lr ? "bit-identical" : "DIFFERENT") + " to a session that never staged"});

  // Resident experts (routing tables built on the device, passes replayed as CUDA graphs) against
  // the host-routed path (routing read back, experts gathered through the VRAM tier): same bits.
  CudaK3Model::Options so = mo;
  so.preload = false;  // every slot, nothing resident up front: each MoE layer takes the read-back path
  CudaK3Model streamed(*host, so);
  {
    CudaK3Session r(model), t(streamed);
    std::vector<float> lr2 = r.prefill(context), lt = t.prefill(context);
    bool equal = lr2 == lt;
    int passes = 1;
    for (int i = 0; i < 4 && equal; ++i, ++passes) {  // the second and later 1-row passes replay a graph
      r.stage(std::span<const int32_t>(&rows[i], 1), lr2, all);
      r.commit(1);
      t.stage(std::span<const int32_t>(&rows[i], 1), lt, all);
      t.commit(1);
      equal = lr2 == lt;
    }
    out.push_back(
        {"resident (device routing, graphs) == host-routed", equal,
         equal ? "prefill and 4 one-row passes bit-identical" : "logits differ at pass " + std::to_string(passes)});
  }

  // Timed passes with a routing trace (the `layers` benchmark) replay graphs too: the layer events
  // and the routing copies are captured. Their logits and routing equal the host-routed path's.
  {
    CudaK3Session r(model), t(streamed);
    r.set_layer_timing(true);
    std::vector<float> lr2 = r.prefill(context), lt = t.prefill(context);
    bool equal = lr2 == lt, replayed = false, timed = true;
    std::string what = "prefill logits differ";
    for (int i = 0; i < 3 && equal; ++i) {
      ForwardTrace tr, tt;
      tr.routing = tt.routing = true;
      PassOptions o = all;
      o.trace = &tr;
      r.stage(std::span<const int32_t>(&rows[i], 1), lr2, o);
      r.commit(1);
      o.trace = &tt;
      t.stage(std::span<const int32_t>(&rows[i], 1), lt, o);
      t.commit(1);
      replayed = r.last_pass_replayed();
      const auto ms = r.layer_ms();
      timed = timed && ms.size() == size_t(host->config().layers) &&
              std::all_of(ms.begin(), ms.end(), [](float v) { return v > 0.f; });
      equal = lr2 == lt && tr.topk_ids == tt.topk_ids && tr.topk_weights == tt.topk_weights && !tr.topk_ids.empty();
      if (!equal) what = "pass " + std::to_string(i + 1) + ": logits or routing differ";
    }
    const bool ok = equal && replayed && timed;
    out.push_back({"timed, traced passes replay graphs == host-routed", ok,
                   ok       ? "3 one-row passes: logits and routing bit-identical, the last replayed, every layer timed"
                   : !equal ? what
                   : !replayed ? "the timed pass ran eagerly"
                               : "layer times missing or not positive"});
  }

  // The GPU session matches the CPU session on this random prompt within fp32 rounding.
  K3Session cpu(*host);
  const auto lc = cpu.prefill(context);
  CudaK3Session g(model);
  const auto lg = g.prefill(context);
  const double r = rel(lg.data(), lc.data(), lc.size());
  out.push_back({"GPU vs CPU prefill logits", r <= 5e-4, "rel_l2 " + fmt(r) + " (<= 5e-4)"});

  // Saved states (serve's turn snapshots): a GPU state loaded into a fresh GPU session continues
  // bit for bit; the CPU and GPU sessions load each other's states (one layout) and continue
  // within fp32 rounding of the session that made it.
  {
    auto step = [&](DecodeSession& s) {  // the next token's logits, committed
      std::vector<float> l;
      s.stage(next, l, all);
      s.commit(1);
      return l;
    };
    CudaK3Session fresh(model);
    fresh.load_state(g.save_state());
    const auto l1 = step(g), l2 = step(fresh);
    out.push_back({"GPU state saved and loaded", l1 == l2 && fresh.n_past() == g.n_past(),
                   std::string("next token's logits ") + (l1 == l2 ? "bit-identical" : "DIFFER")});
    CudaK3Session from_cpu(model);
    from_cpu.load_state(cpu.save_state());
    const auto lc1 = step(cpu), lg1 = step(from_cpu);
    const double rc = rel(lg1.data(), lc1.data(), lc1.size());
    out.push_back({"CPU state loaded on the GPU", rc <= 5e-4,
                   "next token's logits vs the CPU session: rel_l2 " + fmt(rc) + " (<= 5e-4)"});
    K3Session to_cpu(*host);
    to_cpu.load_state(g.save_state());
    const auto lc2 = step(to_cpu), lg2 = step(g);
    const double rg = rel(lc2.data(), lg2.data(), lg2.size());
    out.push_back({"GPU state loaded on the CPU", rg <= 5e-4,
                   "next token's logits vs the GPU session: rel_l2 " + fmt(rg) + " (<= 5e-4)"});
    K3State bad = g.save_state();
    bad.n_past += 1;  // the MLA caches no longer match it
    bool refused = false;
    try {
      fresh.load_state(std::move(bad));
    } catch (const Error&) {
      refused = true;
    }
    out.push_back({"a state that does not fit is refused", refused, refused ? "Error thrown" : "loaded"});
  }

  bool threw = false;
  try {
    a.stage(ids(9), la, all);
  } catch (const Error&) {
    threw = true;
  }
  out.push_back(
      {"pass above max_rows is refused", threw && !a.staged(), threw ? "Error thrown, nothing staged" : "no error"});
  return out;
}

std::vector<Result> k3_kernels(uint64_t seed) {
  std::vector<Result> out;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  OwnedStream st;
  auto up = [&](const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    DeviceBuffer b(std::max<size_t>(v.size(), 1) * sizeof(T));
    b.upload(v.data(), v.size() * sizeof(T));
    return b;
  };
  auto down = [&](const DeviceBuffer& b, size_t n) {
    std::vector<double> v(n);
    st.sync();
    b.download(v.data(), n * 8);
    return v;
  };
  {  // KDA recurrence: K3 head shape, a few heads, against the CPU forward's recurrence
    const int heads = 3, dk = 128, dv = 128, T = 5;
    std::vector<double> S(size_t(heads) * dk * dv), q(size_t(T) * heads * dk), k(q.size()), v(size_t(T) * heads * dv),
        la(q.size()), beta(size_t(T) * heads);
    for (auto& x : S) x = 0.1 * nd(rng);
    for (size_t i = 0; i < q.size(); ++i) {
      q[i] = 0.09 * nd(rng);
      k[i] = 0.09 * nd(rng);
      la[i] = -5.0 / (1.0 + std::exp(-nd(rng)));
    }
    for (auto& x : v) x = nd(rng);
    for (auto& x : beta) x = 1.0 / (1.0 + std::exp(-nd(rng)));
    auto dS = up(S), dq = up(q), dk_ = up(k), dv_ = up(v), dla = up(la), db = up(beta);
    DeviceBuffer dout(v.size() * 8);
    k3::kda_recurrent(dS.as<double>(), heads, dk, dv, T, dq.as<double>(), dk_.as<double>(), dv_.as<double>(),
                      dla.as<double>(), db.as<double>(), dout.as<double>(), st.opaque());
    const auto go = down(dout, v.size()), gS = down(dS, S.size());
    std::vector<double> o(v.size());
    deltafin::kda_recurrent(KdaShape{heads, dk, dv}, S.data(), T, q.data(), k.data(), v.data(), la.data(), beta.data(),
                            o.data());
    const double ro = rel(go.data(), o.data(), o.size()), rs = rel(gS.data(), S.data(), S.size());
    out.push_back({"KDA recurrence vs CPU (fp64)", ro <= 1e-13 && rs <= 1e-13,
                   "outputs rel_l2 " + fmt(ro) + ", state " + fmt(rs) + " (<= 1e-13)"});
  }
  {  // Router at K3's shape against the CPU forward's router (fp64 scores), with planted exact ties
     // across warps (more than k of them: the lower ids must win at the cut), saturated scores
     // (s == 1) and vanishing ones (s == +0).
    const int T = 6, E = 896, K = 16;
    std::vector<double> logits(size_t(T) * E);
    std::vector<float> bias(E);
    std::uniform_int_distribution<int> pick(0, 9);
    for (int t = 0; t < T; ++t)
      for (int e = 0; e < E; ++e) {
        const int p = pick(rng);
        logits[size_t(t) * E + e] = p == 0 ? 40.0 : p == 1 ? -800.0 : 1.5 * nd(rng);
      }
    for (auto& x : bias) x = float(0.1 * nd(rng));
    for (int t = 1; t < T; t += 2)
      for (int i = 0; i < K + K / 2 + 1; ++i) {
        logits[size_t(t) * E + (7 + 37 * i + t) % E] = 2.5;
        bias[(7 + 37 * i + t) % E] = 0.f;  // equal keys, not only equal logits
      }
    auto dl = up(logits), db = up(bias);
    DeviceBuffer di(size_t(T) * K * 4), dw(size_t(T) * K * 8);
    k3::router_select(dl.as<double>(), db.as<float>(), T, E, K, true, 2.5, di.as<int32_t>(), dw.as<double>(),
                      st.opaque());
    std::vector<int32_t> gi(size_t(T) * K);
    const auto gw = down(dw, size_t(T) * K);
    di.download(gi.data(), gi.size() * 4);
    bool ids_ok = true;
    double wdiff = 0;
    for (int t = 0; t < T; ++t) {
      RouterChoice ch;
      route_token(&logits[size_t(t) * E], bias.data(), E, K, true, 2.5f, ch);
      for (int i = 0; i < K; ++i) {
        ids_ok = ids_ok && gi[size_t(t) * K + i] == ch.ids[size_t(i)];
        wdiff = deltafin::test::worst_of(wdiff, std::fabs(gw[size_t(t) * K + i] - ch.weights64[size_t(i)]));
      }
    }
    out.push_back(
        {"router top-k vs CPU (fp64, ties)", ids_ok && wdiff <= 1e-15,
         std::string(ids_ok ? "ids identical" : "ids DIFFER") + ", max weight diff " + fmt(wdiff) + " (<= 1e-15)"});
  }
  {  // AttnRes mix against the spec's arithmetic in fp64
    const int T = 3, H = 7168, n = 5;
    std::vector<std::vector<double>> ent(n, std::vector<double>(size_t(T) * H));
    std::vector<float> w(H);
    for (auto& e : ent)
      for (auto& x : e) x = nd(rng);
    for (auto& x : w) x = float(0.02 * nd(rng));
    std::vector<DeviceBuffer> de;
    k3::ResEntries re;
    for (auto& e : ent) {
      de.push_back(up(e));
      re.p[re.n++] = de.back().as<double>();
    }
    auto dw = up(w);
    DeviceBuffer dout(size_t(T) * H * 8), scratch(size_t(T) * k3::kMaxResEntries * 8);
    k3::attn_res_mix(re, dw.as<float>(), T, H, 1e-5, scratch.as<double>(), dout.as<double>(), st.opaque());
    const auto go = down(dout, size_t(T) * H);
    std::vector<double> ref(size_t(T) * H);
    for (int t = 0; t < T; ++t) {
      std::vector<double> sc(n);
      double mx = -1e300;
      for (int i = 0; i < n; ++i) {
        const double* v = &ent[i][size_t(t) * H];
        double ss = 0;
        for (int j = 0; j < H; ++j) ss += v[j] * v[j];
        const double inv = 1.0 / std::sqrt(ss / H + 1e-5);
        double d = 0;
        for (int j = 0; j < H; ++j) d += v[j] * inv * w[j];
        sc[i] = d;
        mx = std::max(mx, d);
      }
      double sum = 0;
      for (auto& x : sc) sum += (x = std::exp(x - mx));
      for (int j = 0; j < H; ++j) {
        double o = 0;
        for (int i = 0; i < n; ++i) o += sc[i] / sum * ent[i][size_t(t) * H + j];
        ref[size_t(t) * H + j] = o;
      }
    }
    const double r = rel(go.data(), ref.data(), ref.size());
    out.push_back({"AttnRes mix vs CPU (fp64)", r <= 1e-13, "rel_l2 " + fmt(r) + " (<= 1e-13)"});
  }
  return out;
}

}  // namespace deltafin::cuda::check
