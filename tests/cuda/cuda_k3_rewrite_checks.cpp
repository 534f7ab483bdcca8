// The router and the MLA absorb/value kernels after their latency rewrite: the router at K3's
// shape against a CPU computation of the same arithmetic, and all three against the kernels as they
// were (tests/cuda/previous_k3_kernels.cu), bit for bit, with batch invariance of the new ones.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_support.h"
#include "cuda/k3/k3_ops.h"
#include "cuda_k3_checks.h"
#include "previous_k3_kernels.h"

namespace deltafin::cuda::check {
namespace {

template <class T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(std::max<size_t>(v.size(), 1) * sizeof(T));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

template <class T>
std::vector<T> download(const DeviceBuffer& b, size_t n, const OwnedStream& st) {
  st.sync();
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T));
  return v;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

struct RouterCase {
  int T, E, k;
  bool bias, renorm;
};

// Logits with planted exact ties: a block of equal high logits across warps (more than k of them,
// so the lower ids must win at the cut), saturated ones (s == 1 exactly) and vanishing ones (s == +0).
std::vector<float> router_logits(std::mt19937_64& rng, int T, int E, int k) {
  std::normal_distribution<float> nd(0.f, 1.5f);
  std::uniform_int_distribution<int> pick(0, 9);
  std::vector<float> l(size_t(T) * E);
  for (int t = 0; t < T; ++t) {
    float* row = &l[size_t(t) * E];
    for (int e = 0; e < E; ++e) {
      const int p = pick(rng);
      row[e] = p == 0 ? 30.f : p == 1 ? -100.f : nd(rng);
    }
    for (int i = 0; i < k + k / 2 + 1; ++i) row[(7 + 37 * i + t) % E] = 2.5f;
  }
  return l;
}

// Biases from a few exact values, so that equal s plus equal bias still tie.
std::vector<float> router_bias(std::mt19937_64& rng, int E) {
  std::uniform_int_distribution<int> pick(0, 3);
  const float values[4] = {0.f, 0.125f, -0.125f, 0.25f};
  std::vector<float> b(E);
  for (auto& x : b) x = values[pick(rng)];
  return b;
}

// The router's arithmetic on the CPU from the device's sigmoid bits: keys s + bias in fp32, the top
// k by key (ties: lower id), ids ascending, the chosen s summed in that order.
void router_on_cpu(const std::vector<float>& s, const std::vector<float>* bias, int T, int E, int k, bool renorm,
                   float scaling, std::vector<int32_t>& ids, std::vector<float>& wts) {
  ids.assign(size_t(T) * k, 0);
  wts.assign(size_t(T) * k, 0.f);
  for (int t = 0; t < T; ++t) {
    const float* st = &s[size_t(t) * E];
    std::vector<float> key(E);
    for (int e = 0; e < E; ++e) key[e] = st[e] + (bias ? (*bias)[e] : 0.f);
    std::vector<int> order(E);
    for (int e = 0; e < E; ++e) order[e] = e;
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return key[a] != key[b] ? key[a] > key[b] : a < b; });
    std::sort(order.begin(), order.begin() + k);
    float sum = 0.f;
    for (int i = 0; i < k; ++i) sum += st[order[i]];
    for (int i = 0; i < k; ++i) {
      ids[size_t(t) * k + i] = order[i];
      const float sc = st[order[i]];
      wts[size_t(t) * k + i] = (renorm ? sc / (sum + 1e-20f) : sc) * scaling;
    }
  }
}

std::string router_name(const RouterCase& c) {
  return "T=" + std::to_string(c.T) + " E=" + std::to_string(c.E) + " k=" + std::to_string(c.k) +
         (c.bias ? " bias" : " no-bias") + (c.renorm ? " renorm" : " no-renorm");
}

void router_checks(std::mt19937_64& rng, const OwnedStream& st, std::vector<Result>& out) {
  const float scaling = 2.5f;
  auto run = [&](const RouterCase& c, const DeviceBuffer& dl, const DeviceBuffer* db, bool previous_kernel,
                 std::vector<int32_t>& ids, std::vector<float>& wts) {
    DeviceBuffer di(size_t(c.T) * c.k * 4), dw(size_t(c.T) * c.k * 4);
    di.fill_byte(0xff);
    dw.fill_byte(0xff);
    const float* bias = db ? db->as<float>() : nullptr;
    if (previous_kernel)
      previous::router_select(dl.as<float>(), bias, c.T, c.E, c.k, c.renorm, scaling, di.as<int32_t>(), dw.as<float>(),
                              st.opaque());
    else
      k3::router_select(dl.as<float>(), bias, c.T, c.E, c.k, c.renorm, scaling, di.as<int32_t>(), dw.as<float>(),
                        st.opaque());
    ids = download<int32_t>(di, size_t(c.T) * c.k, st);
    wts = download<float>(dw, size_t(c.T) * c.k, st);
  };

  // K3's shape against the CPU, every combination of bias and renormalisation, T = 1 and 8.
  for (const int T : {1, 8})
    for (const bool with_bias : {true, false})
      for (const bool renorm : {true, false}) {
        const RouterCase c{T, 896, 16, with_bias, renorm};
        const auto logits = router_logits(rng, T, c.E, c.k);
        const auto bias = router_bias(rng, c.E);
        DeviceBuffer dl = upload(logits), db = upload(bias), ds(logits.size() * 4);
        previous::router_sigmoid(dl.as<float>(), ds.as<float>(), int64_t(logits.size()), st.opaque());
        const auto s = download<float>(ds, logits.size(), st);
        std::vector<int32_t> gi, ci;
        std::vector<float> gw, cw;
        run(c, dl, with_bias ? &db : nullptr, false, gi, gw);
        router_on_cpu(s, with_bias ? &bias : nullptr, T, c.E, c.k, renorm, scaling, ci, cw);
        const bool ids_ok = gi == ci, w_ok = same_bits(gw, cw);
        out.push_back({"router K3 shape vs CPU, bit for bit: " + router_name(c), ids_ok && w_ok,
                       std::string(ids_ok ? "ids identical" : "ids DIFFER") + ", weights " +
                           (w_ok ? "bit-identical" : "DIFFER")});
      }

  // Against the kernel as it was: small, K3 and nearly the largest expert count (the previous kernel's
  // static shared memory leaves it short of 6144), k from 1 to 64.
  int cases = 0, differ = 0;
  std::string first_bad;
  for (const int E : {96, 896, 6000})
    for (const int k : {1, 8, 16, 33, 64})
      for (const bool with_bias : {true, false})
        for (const bool renorm : {true, false}) {
          const RouterCase c{8, E, k, with_bias, renorm};
          const auto logits = router_logits(rng, c.T, E, k);
          const auto bias = router_bias(rng, E);
          DeviceBuffer dl = upload(logits), db = upload(bias);
          std::vector<int32_t> ni, oi;
          std::vector<float> nw, ow;
          run(c, dl, with_bias ? &db : nullptr, false, ni, nw);
          run(c, dl, with_bias ? &db : nullptr, true, oi, ow);
          ++cases;
          if (ni != oi || !same_bits(nw, ow)) {
            ++differ;
            if (first_bad.empty()) first_bad = router_name(c);
          }
        }
  out.push_back({"router == previous kernel, bit for bit (E=96/896/6000, k=1..64, planted ties)", differ == 0,
                 std::to_string(cases) + " cases of 8 rows, " + std::to_string(differ) + " differ" +
                     (first_bad.empty() ? "" : " (first: " + first_bad + ")")});

  // Batch invariance at K3's shape: each row alone == the same row of the 8-row pass.
  {
    const RouterCase all{8, 896, 16, true, true};
    const auto logits = router_logits(rng, all.T, all.E, all.k);
    const auto bias = router_bias(rng, all.E);
    DeviceBuffer dl = upload(logits), db = upload(bias);
    std::vector<int32_t> ai;
    std::vector<float> aw;
    run(all, dl, &db, false, ai, aw);
    int bad = 0;
    for (int t = 0; t < all.T; ++t) {
      const std::vector<float> row(logits.begin() + size_t(t) * all.E, logits.begin() + size_t(t + 1) * all.E);
      DeviceBuffer dr = upload(row);
      std::vector<int32_t> ri;
      std::vector<float> rw;
      run(RouterCase{1, all.E, all.k, true, true}, dr, &db, false, ri, rw);
      const bool same = std::equal(ri.begin(), ri.end(), ai.begin() + size_t(t) * all.k) &&
                        std::memcmp(rw.data(), aw.data() + size_t(t) * all.k, rw.size() * 4) == 0;
      bad += same ? 0 : 1;
    }
    out.push_back({"router batch invariance (E=896 k=16: row alone == row of T=8)", bad == 0,
                   std::to_string(all.T) + " rows compared bit for bit, " + std::to_string(bad) + " differ"});
  }
}

struct MlaShape {
  int nh, N, P, Vd, R;
  const char* name;
};

void mla_checks(std::mt19937_64& rng, const OwnedStream& st, std::vector<Result>& out) {
  std::normal_distribution<float> nd(0.f, 1.f);
  const MlaShape shapes[] = {
      {96, 128, 64, 128, 512, "K3"},
      {3, 37, 5, 21, 100, "odd (N=37, R=100)"},
      {2, 40, 8, 16, 600, "odd (N=40, R=600)"},
      {4, 16, 4, 8, 98, "odd (R=98: column kernel)"},
  };
  const int Ts[] = {1, 2, 3, 5, 8, 13};
  for (const bool bf16 : {true, false}) {
    int cases = 0, absorb_bad = 0, value_bad = 0, absorb_var = 0, value_var = 0, rows = 0;
    std::string first_bad;
    for (const auto& sh : shapes)
      for (const bool offset : {false, true}) {  // offset: the weights one element past an aligned start
        if (offset && std::string(sh.name) != "K3") continue;
        const size_t welems = size_t(sh.nh) * (sh.N + sh.Vd) * sh.R + 1;
        std::vector<float> wf(welems);
        std::vector<uint16_t> wb;
        if (bf16) wb = rand_bf16(rng, welems, 0.05f);
        else
          for (auto& x : wf) x = 0.05f * nd(rng);
        DeviceBuffer dw = bf16 ? upload(wb) : upload(wf);
        const void* wdata = static_cast<const uint8_t*>(dw.data()) + (offset ? (bf16 ? 2 : 4) : 0);
        k3::DevMat kvb;
        kvb.data = wdata;
        kvb.bf16 = bf16;
        kvb.rows = int64_t(sh.nh) * (sh.N + sh.Vd);
        kvb.cols = sh.R;
        for (const int T : Ts) {
          std::vector<float> q(size_t(T) * sh.nh * (sh.N + sh.P)), olat(size_t(T) * sh.nh * sh.R);
          for (auto& x : q) x = nd(rng);
          for (auto& x : olat) x = nd(rng);
          DeviceBuffer dq = upload(q), dol = upload(olat);
          const size_t na = size_t(T) * sh.nh * sh.R, nv = size_t(T) * sh.nh * sh.Vd;
          DeviceBuffer an(na * 4), ao(na * 4), vn(nv * 4), vo(nv * 4);
          an.fill_byte(0xff);
          ao.fill_byte(0);
          vn.fill_byte(0xff);
          vo.fill_byte(0);
          k3::mla_absorb_q(dq.as<float>(), kvb, T, sh.nh, sh.N, sh.P, sh.Vd, an.as<float>(), st.opaque());
          previous::mla_absorb_q(dq.as<float>(), wdata, bf16, sh.R, T, sh.nh, sh.N, sh.P, sh.Vd, ao.as<float>(),
                                 st.opaque());
          k3::mla_value(dol.as<float>(), kvb, T, sh.nh, sh.N, sh.R, sh.Vd, vn.as<float>(), st.opaque());
          previous::mla_value(dol.as<float>(), wdata, bf16, T, sh.nh, sh.N, sh.R, sh.Vd, vo.as<float>(), st.opaque());
          const auto a_new = download<float>(an, na, st), a_old = download<float>(ao, na, st);
          const auto v_new = download<float>(vn, nv, st), v_old = download<float>(vo, nv, st);
          ++cases;
          const bool a_ok = same_bits(a_new, a_old), v_ok = same_bits(v_new, v_old);
          absorb_bad += a_ok ? 0 : 1;
          value_bad += v_ok ? 0 : 1;
          if ((!a_ok || !v_ok) && first_bad.empty())
            first_bad = std::string(sh.name) + (offset ? " offset" : "") + " T=" + std::to_string(T) +
                        (a_ok ? "" : " absorb") + (v_ok ? "" : " value");
          if (T != 8) continue;
          // Each row alone == the same row of the 8-row pass.
          for (int t = 0; t < T; ++t, ++rows) {
            DeviceBuffer a1(size_t(sh.nh) * sh.R * 4), v1(size_t(sh.nh) * sh.Vd * 4);
            k3::mla_absorb_q(dq.as<float>() + size_t(t) * sh.nh * (sh.N + sh.P), kvb, 1, sh.nh, sh.N, sh.P, sh.Vd,
                             a1.as<float>(), st.opaque());
            k3::mla_value(dol.as<float>() + size_t(t) * sh.nh * sh.R, kvb, 1, sh.nh, sh.N, sh.R, sh.Vd, v1.as<float>(),
                          st.opaque());
            const auto ar = download<float>(a1, size_t(sh.nh) * sh.R, st),
                       vr = download<float>(v1, size_t(sh.nh) * sh.Vd, st);
            absorb_var += std::memcmp(ar.data(), a_new.data() + size_t(t) * sh.nh * sh.R, ar.size() * 4) == 0 ? 0 : 1;
            value_var += std::memcmp(vr.data(), v_new.data() + size_t(t) * sh.nh * sh.Vd, vr.size() * 4) == 0 ? 0 : 1;
          }
        }
      }
    const std::string type = bf16 ? "bf16" : "f32";
    const std::string tail = first_bad.empty() ? "" : " (first: " + first_bad + ")";
    out.push_back({"mla_absorb_q == previous kernel, bit for bit (" + type + ", K3 and odd shapes, T=1..13)",
                   absorb_bad == 0,
                   std::to_string(cases) + " cases, " + std::to_string(absorb_bad) + " differ" + tail});
    out.push_back({"mla_value == previous kernel, bit for bit (" + type + ", K3 and odd shapes, T=1..13)",
                   value_bad == 0, std::to_string(cases) + " cases, " + std::to_string(value_bad) + " differ" + tail});
    out.push_back({"mla_absorb_q / mla_value batch invariance (" + type + ": row alone == row of T=8)",
                   absorb_var == 0 && value_var == 0 && rows > 0,
                   std::to_string(rows) + " rows compared bit for bit, absorb " + std::to_string(absorb_var) +
                       " and value " + std::to_string(value_var) + " differ"});
  }
}

// The attention over the latent cache: the kernel that scores several positions per warp and keeps
// several cached rows in flight == the first kernel bit for bit, at K3's shape over short and long
// contexts and at odd shapes (each column count the kernel is built for), plus each row alone ==
// the same row of the pass.
void attend_checks(std::mt19937_64& rng, const OwnedStream& st, std::vector<Result>& out) {
  std::normal_distribution<float> nd(0.f, 1.f);
  struct Case {
    int nh, N, R, P;
    int64_t base;
    const char* name;
  };
  const Case cases[] = {
      {96, 128, 512, 64, 0, "K3, context 1"},
      {96, 128, 512, 64, 63, "K3, context 64"},
      {96, 128, 512, 64, 1000, "K3, context 1001"},
      {16, 128, 512, 64, 4100, "K3 (16 heads), context 4101"},
      {4, 128, 512, 64, 9000, "K3 (4 heads), context 9001: scores past shared memory"},
      {3, 37, 100, 5, 70, "R=100, P=5"},
      {2, 40, 600, 8, 33, "R=600 (3 columns per thread)"},
      {4, 16, 1024, 64, 17, "R=1024 (4 columns)"},
      {5, 24, 256, 0, 9, "R=256, no rope part"},
  };
  int compared = 0, bad = 0, rows = 0, var = 0;
  std::string first_bad;
  for (const auto& c : cases)
    for (const int T : {1, 3, 8}) {
      const int W = c.R + c.P;
      const int64_t max_ctx = c.base + T + 5;
      std::vector<float> qabs(size_t(T) * c.nh * c.R), q(size_t(T) * c.nh * (c.N + c.P)), cache(size_t(max_ctx) * W);
      for (auto& x : qabs) x = 0.05f * nd(rng);
      for (auto& x : q) x = nd(rng);
      for (auto& x : cache) x = nd(rng);
      DeviceBuffer dqa = upload(qabs), dq = upload(q), dc = upload(cache);
      const size_t no = size_t(T) * c.nh * c.R;
      DeviceBuffer sn(size_t(T) * c.nh * max_ctx * 4), so(size_t(T) * c.nh * max_ctx * 4), on(no * 4), oo(no * 4);
      on.fill_byte(0xff);
      oo.fill_byte(0);
      const float scale = 1.f / std::sqrt(static_cast<float>(c.N + c.P));
      k3::mla_attend(dqa.as<float>(), dq.as<float>(), dc.as<float>(), c.base, T, c.nh, c.N, c.R, c.P, scale,
                     sn.as<float>(), max_ctx, on.as<float>(), st.opaque());
      previous::mla_attend(dqa.as<float>(), dq.as<float>(), dc.as<float>(), c.base, T, c.nh, c.N, c.R, c.P, scale,
                           so.as<float>(), max_ctx, oo.as<float>(), st.opaque());
      const auto o_new = download<float>(on, no, st), o_old = download<float>(oo, no, st);
      ++compared;
      if (!same_bits(o_new, o_old)) {
        ++bad;
        if (first_bad.empty()) first_bad = std::string(c.name) + " T=" + std::to_string(T);
      }
      if (T != 8) continue;
      for (int t = 0; t < T; ++t, ++rows) {
        const size_t n1 = size_t(c.nh) * c.R;
        DeviceBuffer o1(n1 * 4);
        k3::mla_attend(dqa.as<float>() + size_t(t) * n1, dq.as<float>() + size_t(t) * c.nh * (c.N + c.P),
                       dc.as<float>(), c.base + t, 1, c.nh, c.N, c.R, c.P, scale, sn.as<float>(), max_ctx,
                       o1.as<float>(), st.opaque());
        const auto r1 = download<float>(o1, n1, st);
        var += std::memcmp(r1.data(), o_new.data() + size_t(t) * n1, n1 * 4) == 0 ? 0 : 1;
      }
    }
  out.push_back({"mla_attend == previous kernel, bit for bit (K3 at contexts 1..9001, odd shapes, T=1,3,8)", bad == 0,
                 std::to_string(compared) + " cases, " + std::to_string(bad) + " differ" +
                     (first_bad.empty() ? "" : " (first: " + first_bad + ")")});
  out.push_back({"mla_attend batch invariance (row alone == row of T=8)", var == 0 && rows > 0,
                 std::to_string(rows) + " rows compared bit for bit, " + std::to_string(var) + " differ"});
}

}  // namespace

std::vector<Result> k3_rewritten_kernels(uint64_t seed) {
  std::vector<Result> out;
  std::mt19937_64 rng(seed + 17);
  OwnedStream st;
  router_checks(rng, st, out);
  mla_checks(rng, st, out);
  attend_checks(rng, st, out);
  return out;
}

}  // namespace deltafin::cuda::check
