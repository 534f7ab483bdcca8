// deltafin-cuda-k3-bench experts-sweep: every variant of the lab's fp64 routed experts
// (kernels/cuda/lab/experts64_lab.h) and the product's k3::routed_experts at K3's shapes (latent 3584,
// moe intermediate 3072, 16 of 896 experts per row, 896 random MXFP4 experts in VRAM) for T = 1, 2, 4,
// 8, 16, against the device-to-device copy rate measured in the same run, so that the product's kernel
// shape can be chosen from data.
//
// Checks first, per variant: its output for one routing of every T and for a crowded T = 16 routing
// (20 experts for 16 rows, so groups of every size and several passes' worth of sharing) against the
// product's, "same bits" or the largest relative difference (relative to the larger of |product| and 1 %
// of its row's RMS); and batch invariance: every row of both T = 16 passes bit for bit equal to that row
// computed alone (T = 1). An order-keeping variant (experts64_lab_keeps_order) must give the product's
// bits; one that does not is marked and never ranked. A variant off by more than 1e-9, or not batch
// invariant, prints FAIL and is not timed.
//
// Timing: the calls of several routings (so that no call finds its experts in L2) captured in one CUDA
// graph, median of 9 launches (5 with --quick) after one untimed; routings "uniform" (each row's 16
// experts drawn uniformly) and "local" (each row keeps each of the previous row's experts with
// probability 1/2, as consecutive tokens of a verify pass tend to). GB/s counts the weight bytes each
// variant actually reads: one read of an expert per group of pairs and per pass.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/bench/bench_data.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/k3/bench/call_timer.cuh"
#include "cuda/k3/bench/sweep_support.h"
#include "cuda/k3/bench/experts_sweep.h"
#include "cuda/k3/k3_ops.h"
#include "cuda/lab/experts64_lab.h"

namespace deltafin::cuda::bench {
namespace {

constexpr int kLatent = 3584, kInter = 3072, kExperts = 896, kTopK = 16, kMaxT = 16;
constexpr int kTs[] = {1, 2, 4, 8, 16};
// One expert's bytes: gate, up and down, codes and E8M0 scales (17,547,264).
constexpr double kExpertBytes = 3.0 * (double(kInter) * kLatent / 2 + double(kInter) * kLatent / 32);
constexpr int kProduct = -1;  // the variant index of k3::routed_experts

// The --quick subset: the lab's copy of the product's shape and one variant per idea that moves loads.
const char* const kQuick[] = {"u4d8a1w4b4s0x0c0g4f4n256p0h1", "u4d4a1w4b4s0x0c0g4f4n256p0h1",
                              "u4d8a2w4b3s0x0c0g4f4n256p0h1", "u4d8a1w4b4s1x0c0g4f4n256p0h1",
                              "u4d8a1w4b4s0x1c0g4f4n256p0h1", "u4d8a1w4b4s0x0c0g4f4n256p1h1",
                              "u4d8a1w4b4s1x0c0g4f4n256p1h1", "u4d8a1w4b2s0x0c0g4f4n256p0h2"};

// `sets` routings of T rows: each row's kTopK distinct ids, ascending (as the router gives them), drawn
// from the first `pool` experts of a random order; a row keeps each of the previous row's with
// probability `share`. Weights positive, random.
struct Routing {
  std::string kind;
  int T = 0, sets = 0;
  std::vector<int32_t> ids;  // [sets][T][kTopK]
  std::vector<double> w;
  DeviceBuffer dids, dw;
};
Routing make_routing(std::mt19937_64& rng, const std::string& kind, int T, int sets, int pool, double share) {
  Routing r;
  r.kind = kind;
  r.T = T;
  r.sets = sets;
  std::uniform_real_distribution<double> u(0.0, 1.0), uw(0.05, 1.0);
  std::vector<int32_t> order(kExperts);
  for (int s = 0; s < sets; ++s) {
    for (int e = 0; e < kExperts; ++e) order[e] = e;
    std::shuffle(order.begin(), order.end(), rng);
    std::uniform_int_distribution<int> pick(0, pool - 1);
    std::vector<int32_t> prev;
    for (int t = 0; t < T; ++t) {
      std::vector<int32_t> row;
      for (int32_t e : prev)
        if (u(rng) < share) row.push_back(e);
      while (int(row.size()) < kTopK) {
        const int32_t e = order[pick(rng)];
        if (std::find(row.begin(), row.end(), e) == row.end()) row.push_back(e);
      }
      std::sort(row.begin(), row.end());
      r.ids.insert(r.ids.end(), row.begin(), row.end());
      for (int j = 0; j < kTopK; ++j) r.w.push_back(uw(rng));
      prev = row;
    }
  }
  r.dids = DeviceBuffer(r.ids.size() * sizeof(int32_t));
  r.dids.upload(r.ids.data(), r.dids.size());
  r.dw = DeviceBuffer(r.w.size() * sizeof(double));
  r.dw.upload(r.w.data(), r.dw.size());
  return r;
}

// Expert reads per call, averaged over the sets: per pass of `pass` pairs, ceil(pairs of the expert / group).
double expert_reads(const Routing& r, int group, int pass) {
  const int rows = std::max(1, std::min(r.T, pass / kTopK));
  double sum = 0;
  for (int s = 0; s < r.sets; ++s)
    for (int t0 = 0; t0 < r.T; t0 += rows) {
      std::vector<int> count(kExperts, 0);
      for (int t = t0; t < std::min(r.T, t0 + rows); ++t)
        for (int j = 0; j < kTopK; ++j) ++count[r.ids[(size_t(s) * r.T + t) * kTopK + j]];
      for (int c : count) sum += (c + group - 1) / group;
    }
  return sum / r.sets;
}

struct Result {
  std::string variant, kind;
  int T;
  double ms, gbs, pct, speedup;
};

struct Check {
  bool ran = false, ok = false, same_bits = true, invariant = true;
  double max_rel = 0;
  std::string why;
};

}  // namespace

int experts_sweep(const ExpertsSweepOptions& opt) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a line at a time, also into a pipe or a file
  const DeviceInfo dev = device_info();
  std::printf("experts-sweep%s: fp64 routed experts, latent %d, intermediate %d, top-%d of %d\n",
              opt.quick ? " --quick" : "", kLatent, kInter, kTopK, kExperts);
  std::printf("device: %s, sm_%d%d, %d SMs, L2 %zu MiB\n", dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count,
              dev.l2_bytes >> 20);
  Timer timer;
  std::vector<Row> d2d_rows;
  const double d2d_gbs = measure_d2d(timer, d2d_rows);
  std::printf("cudaMemcpy D2D: %.1f GB/s (read + write)\n", d2d_gbs);
  CallTimer ct(opt.graph, opt.quick ? 5 : 9);

  // Which variants run: the product first, then the lab's (filtered).
  auto listed = [](const std::string& list, const std::string& name) {
    std::stringstream ss(list);
    for (std::string item; std::getline(ss, item, ',');)
      if (item == name) return true;
    return false;
  };
  std::vector<int> variants = {kProduct};
  for (int v = 0; v < lab::experts64_lab_count(); ++v) {
    const std::string name = lab::experts64_lab_name(v);
    if (!opt.variants.empty() && !listed(opt.variants, name)) continue;
    if (listed(opt.skip, name)) continue;
    if (opt.quick && opt.variants.empty() && std::find_if(std::begin(kQuick), std::end(kQuick), [&](const char* q) {
                                               return name == q;
                                             }) == std::end(kQuick))
      continue;
    if (!lab::experts64_lab_applies(v, kLatent, kInter)) {
      std::printf("SKIP %s: does not fit K3's shapes\n", name.c_str());
      continue;
    }
    variants.push_back(v);
  }
  if (opt.quick && opt.variants.empty())
    for (const char* q : kQuick) {
      bool found = false;
      for (int v = 0; v < lab::experts64_lab_count(); ++v) found = found || lab::experts64_lab_name(v) == q;
      if (!found) std::printf("note: the quick subset's %s is not in the lab's table\n", q);
    }
  auto name_of = [](int v) { return v == kProduct ? std::string("product") : lab::experts64_lab_name(v); };
  auto group_of = [](int v) { return v == kProduct ? 4 : lab::experts64_lab_params(v).group; };
  auto pass_of = [](int v) { return v == kProduct ? 256 : lab::experts64_lab_params(v).pass; };
  auto keeps = [](int v) { return v == kProduct || lab::experts64_lab_keeps_order(v); };

  // 896 experts in VRAM (17.5 GB), activations, workspace for the largest pass of any variant.
  DeviceBuffer wbuf;
  const std::vector<MxExpert> all = random_experts(wbuf, kExperts, kLatent, kInter);
  DeviceBuffer table(all.size() * sizeof(MxExpert));
  table.upload(all.data(), table.size());
  std::mt19937_64 rng(20261207);
  std::normal_distribution<double> nd(0.0, 0.05);
  std::vector<double> zh(size_t(kMaxT) * kLatent);
  for (double& v : zh) v = nd(rng);
  DeviceBuffer z(zh.size() * sizeof(double)), y(zh.size() * sizeof(double)), y1(zh.size() * sizeof(double));
  z.upload(zh.data(), z.size());
  int64_t scratch_n = k3::routed_experts_scratch(kMaxT, kTopK, kLatent, kInter);
  for (int v : variants)
    if (v != kProduct) scratch_n = std::max(scratch_n, lab::experts64_lab_scratch(v, kMaxT, kTopK, kLatent, kInter));
  DeviceBuffer scratch(size_t(scratch_n) * sizeof(double));
  synchronize();  // the fills ran on the legacy stream; the calls below run on a non-blocking one

  const MxExpert* tab = table.as<MxExpert>();
  auto call = [&](int v, const int32_t* ids, const double* w, int T, const double* zp, double* yp, cudaStream_t s) {
    if (v == kProduct) k3::routed_experts(tab, ids, w, T, kTopK, kLatent, kInter, zp, scratch.as<double>(), yp, s);
    else lab::experts64_lab(v, tab, ids, w, T, kTopK, kLatent, kInter, zp, scratch.as<double>(), yp, s);
  };

  // Routings: timed sets per T (enough calls per graph for a stable time, few enough for the budget),
  // and the crowded check routing.
  const int sets_for[] = {48, 24, 12, 8, 6};
  std::vector<Routing> uniform, local;
  for (int i = 0; i < 5; ++i) {
    uniform.push_back(make_routing(rng, "uniform", kTs[i], sets_for[i], kExperts, 0.0));
    if (!opt.quick && kTs[i] > 1) local.push_back(make_routing(rng, "local", kTs[i], sets_for[i], kExperts, 0.5));
  }
  const Routing crowd = make_routing(rng, "crowded", kMaxT, 1, 20, 0.0);
  std::printf("routings: uniform (16 of 896 per row, drawn independently)%s; checks add a crowded T=16 (16 of 20)\n",
              opt.quick ? "" : ", local (a row keeps each of the previous row's experts with probability 1/2)");
  for (const Routing& r : uniform)
    std::printf("  uniform T=%-2d %5.1f expert reads per call (product)\n", r.T, expert_reads(r, 4, 256));
  for (const Routing& r : local)
    std::printf("  local   T=%-2d %5.1f expert reads per call (product)\n", r.T, expert_reads(r, 4, 256));

  auto run_sync = [&](int v, const Routing& r, int set, DeviceBuffer& out) {
    call(v, r.dids.as<int32_t>() + size_t(set) * r.T * kTopK, r.dw.as<double>() + size_t(set) * r.T * kTopK, r.T,
         z.as<double>(), out.as<double>(), ct.stream());
    DELTAFIN_CUDA_CHECK(cudaStreamSynchronize(ct.stream()));
    std::vector<double> h(size_t(r.T) * kLatent);
    out.download(h.data(), h.size() * sizeof(double));
    return h;
  };
  // The product's outputs: set 0 of each uniform T, and the crowded pass.
  std::vector<std::vector<double>> ref;
  for (const Routing& r : uniform) ref.push_back(run_sync(kProduct, r, 0, y));
  const std::vector<double> ref_crowd = run_sync(kProduct, crowd, 0, y);

  // Compares out with the product's ref (T rows), into c.
  auto compare = [&](const std::vector<double>& out, const std::vector<double>& r, int T, Check& c) {
    for (int t = 0; t < T; ++t) {
      double ss = 0;
      for (int i = 0; i < kLatent; ++i) ss += r[size_t(t) * kLatent + i] * r[size_t(t) * kLatent + i];
      const double floor_ = 0.01 * std::sqrt(ss / kLatent);
      for (int i = 0; i < kLatent; ++i) {
        const double a = out[size_t(t) * kLatent + i], b = r[size_t(t) * kLatent + i];
        if (std::memcmp(&a, &b, sizeof a) != 0) c.same_bits = false;
        const double rel = std::fabs(a - b) / std::max(std::fabs(b), floor_);
        if (!(rel <= c.max_rel)) c.max_rel = std::isnan(rel) ? INFINITY : rel;
      }
    }
  };
  // Each row of routing r's set 0 alone against the same row of the whole pass `whole`.
  auto rows_alone = [&](int v, const Routing& r, const std::vector<double>& whole, Check& c) {
    for (int t = 0; t < r.T; ++t)
      call(v, r.dids.as<int32_t>() + size_t(t) * kTopK, r.dw.as<double>() + size_t(t) * kTopK, 1,
           z.as<double>() + size_t(t) * kLatent, y1.as<double>() + size_t(t) * kLatent, ct.stream());
    DELTAFIN_CUDA_CHECK(cudaStreamSynchronize(ct.stream()));
    std::vector<double> alone(size_t(r.T) * kLatent);
    y1.download(alone.data(), alone.size() * sizeof(double));
    for (int t = 0; t < r.T && c.invariant; ++t)
      if (std::memcmp(&alone[size_t(t) * kLatent], &whole[size_t(t) * kLatent], kLatent * sizeof(double)) != 0) {
        c.invariant = false;
        char b[128];
        std::snprintf(b, sizeof b, "not batch invariant: %s T=%d row %d differs from that row alone", r.kind.c_str(),
                      r.T, t);
        c.why = b;
      }
  };

  std::vector<Check> checks(variants.size());
  std::vector<Result> results;
  std::vector<std::string> fails;
  bool lost = false;  // a fault that leaves the context unusable ends the sweep early
  for (size_t vi = 0; vi < variants.size() && !lost; ++vi) {
    const int v = variants[vi];
    const std::string name = name_of(v);
    Check& c = checks[vi];
    c.ran = true;
    try {
      for (size_t i = 0; i < uniform.size(); ++i) compare(run_sync(v, uniform[i], 0, y), ref[i], uniform[i].T, c);
      const std::vector<double> crowd_out = run_sync(v, crowd, 0, y);
      compare(crowd_out, ref_crowd, crowd.T, c);
      rows_alone(v, uniform.back(), v == kProduct ? ref.back() : run_sync(v, uniform.back(), 0, y), c);
      if (c.invariant) rows_alone(v, crowd, crowd_out, c);
      if (c.why.empty() && !(c.max_rel <= 1e-9)) {
        char b[96];
        std::snprintf(b, sizeof b, "differs from the product by %.3g (relative) > 1e-9", c.max_rel);
        c.why = b;
      }
    } catch (const std::exception& e) {
      c.why = std::string("error: ") + e.what();
    }
    c.ok = c.why.empty();
    const std::string what = v == kProduct ? "k3::routed_experts" : lab::experts64_lab_what(v);
    char verdict[96];
    if (c.same_bits) std::snprintf(verdict, sizeof verdict, "same bits");
    else std::snprintf(verdict, sizeof verdict, "max rel %.2e", c.max_rel);
    std::printf("\n[%2zu/%zu] %-30s %-13s %s\n        %s; %s\n", vi + 1, variants.size(), name.c_str(),
                keeps(v) ? "order-keeping" : "order-changing", what.c_str(), verdict,
                c.invariant ? "batch invariant" : "NOT batch invariant");
    if (!c.ok) {
      std::printf("FAIL %s: %s\n", name.c_str(), c.why.c_str());
      fails.push_back(name + ": " + c.why);
      if (cudaDeviceSynchronize() != cudaSuccess) lost = true;  // a fault is sticky; a bad launch is not
      (void)cudaGetLastError();
      continue;
    }
    if (keeps(v) && !c.same_bits)
      std::printf("NOTE %s: order-keeping, yet not the product's bits: not a candidate\n", name.c_str());
    for (const std::vector<Routing>* rs : {&uniform, &local}) {
      std::string line;
      for (const Routing& r : *rs) {
        try {
          const float ms = ct.per_call_ms(r.sets, [&](int i, cudaStream_t s) {
            const int set = i % r.sets;
            call(v, r.dids.as<int32_t>() + size_t(set) * r.T * kTopK, r.dw.as<double>() + size_t(set) * r.T * kTopK,
                 r.T, z.as<double>(), y.as<double>(), s);
          });
          const double gbs = expert_reads(r, group_of(v), pass_of(v)) * kExpertBytes / (ms * 1e-3) / 1e9;
          double speedup = 1.0;
          for (const Result& p : results)
            if (p.variant == "product" && p.kind == r.kind && p.T == r.T) speedup = p.ms / ms;
          results.push_back({name, r.kind, r.T, ms, gbs, 100.0 * gbs / d2d_gbs, speedup});
          char b[96];
          std::snprintf(b, sizeof b, " T=%d %.3fms %.0fGB/s %.1f%% x%.2f", r.T, ms, gbs, results.back().pct, speedup);
          line += b;
        } catch (const std::exception& e) {
          std::printf("FAIL %s %s T=%d: %s\n", name.c_str(), r.kind.c_str(), r.T, e.what());
          fails.push_back(name + " " + r.kind + ": " + e.what());
          if (cudaDeviceSynchronize() != cudaSuccess) lost = true;
          (void)cudaGetLastError();
          break;
        }
      }
      if (!line.empty()) std::printf("        %-7s%s\n", rs->front().kind.c_str(), line.c_str());
      if (lost) break;
    }
  }
  if (lost)
    std::printf(
        "\nFATAL: the device context was lost (see the FAIL above); the sweep stops here. Run it again with "
        "--skip NAME to leave that variant out.\n");

  // Tables: % of the copy rate, then the speed-up over the product, per variant, routing and T.
  auto find = [&](const std::string& v, const std::string& kind, int T) -> const Result* {
    for (const Result& r : results)
      if (r.variant == v && r.kind == kind && r.T == T) return &r;
    return nullptr;
  };
  std::vector<std::pair<std::string, int>> cols;
  for (const Routing& r : uniform) cols.push_back({"uniform", r.T});
  for (const Routing& r : local) cols.push_back({"local", r.T});
  for (int table_kind = 0; table_kind < 2; ++table_kind) {
    std::printf("\n%s\n%-30s %-5s",
                table_kind == 0 ? "% of the D2D copy rate (weight bytes actually read)"
                                : "speed-up over the product (its time / the variant's)",
                "variant", "order");
    for (const auto& col : cols) std::printf(" %c%-5d", col.first[0], col.second);
    std::printf("\n");
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      const std::string name = name_of(variants[vi]);
      std::printf("%-30s %-5s", name.c_str(), keeps(variants[vi]) ? "keep" : "other");
      for (const auto& col : cols) {
        const Result* r = find(name, col.first, col.second);
        if (!r) std::printf(" %6s", "-");
        else if (table_kind == 0) std::printf(" %6.1f", r->pct);
        else std::printf(" %6.2f", r->speedup);
      }
      std::printf("\n");
    }
  }
  // Best per routing and T: among the candidates (order-keeping, the product's bits, batch invariant)
  // and among all that passed.
  struct Best {
    std::string kind;
    int T;
    const Result *cand, *any, *product;
  };
  std::vector<Best> bests;
  std::printf("\nbest per routing and T: candidate (order-keeping, same bits) | any order | product\n");
  for (const auto& col : cols) {
    const Result *cand = nullptr, *any = nullptr;
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      const Result* r = find(name_of(variants[vi]), col.first, col.second);
      if (!r) continue;
      if (!any || r->ms < any->ms) any = r;
      if (keeps(variants[vi]) && checks[vi].same_bits && (!cand || r->ms < cand->ms)) cand = r;
    }
    const Result* prod = find("product", col.first, col.second);
    if (!cand || !any || !prod) continue;
    bests.push_back({col.first, col.second, cand, any, prod});
    std::printf("%-7s T=%-2d %-30s %5.1f%% x%.2f | %-30s %5.1f%% x%.2f | %5.1f%% %.3fms\n", col.first.c_str(),
                col.second, cand->variant.c_str(), cand->pct, cand->speedup, any->variant.c_str(), any->pct,
                any->speedup, prod->pct, prod->ms);
  }
  if (!fails.empty()) std::printf("\n%zu FAIL line(s) above: those variants are not ranked\n", fails.size());

  std::ofstream js(opt.json_path);
  js << "{\n  \"device\": \"" << json_escape(dev.name) << "\",\n  \"sm\": \"" << dev.cc_major << dev.cc_minor
     << "\",\n  \"sms\": " << dev.sm_count << ",\n  \"d2d_gbs\": " << d2d_gbs << ",\n  \"timing\": \""
     << (ct.graph() ? "graph" : "stream") << "\",\n  \"quick\": " << (opt.quick ? "true" : "false")
     << ",\n  \"latent\": " << kLatent << ",\n  \"inter\": " << kInter << ",\n  \"top_k\": " << kTopK
     << ",\n  \"experts\": " << kExperts << ",\n  \"variants\": [\n";
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const int v = variants[vi];
    const Check& c = checks[vi];
    js << "    {\"name\": \"" << name_of(v) << "\", \"what\": \""
       << json_escape(v == kProduct ? "k3::routed_experts" : lab::experts64_lab_what(v))
       << "\", \"keeps_order\": " << (keeps(v) ? "true" : "false") << ", \"checked\": " << (c.ran ? "true" : "false")
       << ", \"ok\": " << (c.ok ? "true" : "false") << ", \"same_bits\": " << (c.same_bits ? "true" : "false")
       << ", \"batch_invariant\": " << (c.invariant ? "true" : "false")
       << ", \"max_rel_diff\": " << (std::isfinite(c.max_rel) ? c.max_rel : -1.0) << ", \"why\": \""
       << json_escape(c.why) << "\"}" << (vi + 1 < variants.size() ? ",\n" : "\n");
  }
  js << "  ],\n  \"results\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    js << "    {\"variant\": \"" << r.variant << "\", \"routing\": \"" << r.kind << "\", \"T\": " << r.T
       << ", \"median_ms\": " << r.ms << ", \"gbs\": " << r.gbs << ", \"pct_of_d2d\": " << r.pct
       << ", \"speedup\": " << r.speedup << "}" << (i + 1 < results.size() ? ",\n" : "\n");
  }
  js << "  ],\n  \"best\": [\n";
  for (size_t i = 0; i < bests.size(); ++i) {
    const Best& b = bests[i];
    js << "    {\"routing\": \"" << b.kind << "\", \"T\": " << b.T << ", \"candidate\": \"" << b.cand->variant
       << "\", \"candidate_speedup\": " << b.cand->speedup << ", \"any\": \"" << b.any->variant
       << "\", \"any_speedup\": " << b.any->speedup << ", \"product_pct_of_d2d\": " << b.product->pct << "}"
       << (i + 1 < bests.size() ? ",\n" : "\n");
  }
  js << "  ],\n  \"fails\": [\n";
  for (size_t i = 0; i < fails.size(); ++i)
    js << "    \"" << json_escape(fails[i]) << "\"" << (i + 1 < fails.size() ? ",\n" : "\n");
  js << "  ]\n}\n";
  std::printf("\nJSON written to %s\n", opt.json_path.c_str());
  return fails.empty() ? 0 : 1;
}

}  // namespace deltafin::cuda::bench
