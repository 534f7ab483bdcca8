#include "bench/verifier_bench.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "base/thread_pool.h"
#include "cpu/gemm.h"
#include "model/checkpoint.h"
#include "runtime/k3_model.h"
#include "bench/verifier_direct_expert_source.h"

namespace deltafin {

double breakeven_acceptance(int T, double ratio) {
  if (T <= 1) return 0;
  if (ratio <= 1) return 0;
  if (ratio > T) return ratio;  // even all guesses accepted would not pay
  auto yield = [&](double a) {
    double e = 0, p = 1;
    for (int i = 0; i < T; ++i, p *= a) e += p;
    return e;
  };
  double lo = 0, hi = 1;
  for (int it = 0; it < 60; ++it) {
    const double mid = (lo + hi) / 2;
    (yield(mid) < ratio ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

VerifyBenchResult run_verify_bench(const VerifyBenchOptions& o) {
  using Clock = std::chrono::steady_clock;
  K3Model::Options mo;
  if (o.streamed) {
    // The expert locations come from the headers alone; the model then binds the spine as usual.
    auto ck = Checkpoint::open(o.model_root);
    const K3Config cfg = K3Config::load(o.model_root + "/config.json");
    const K3Weights w = K3Weights::bind(*ck, cfg);
    std::vector<std::string> paths;
    for (uint32_t i = 0; i < ck->shard_names().size(); ++i) paths.push_back(ck->shard_path(i));
    mo.experts = std::make_unique<DirectReadExpertSource>(paths, w.experts);
  }
  auto model = K3Model::load(o.model_root, std::move(mo));
  const K3Config& c = model->config();
  VerifyBenchResult r;
  r.model_root = o.model_root;
  r.expert_source = model->experts().describe();
  r.cpu_kernels = kernels::active().name;
  r.threads = ThreadPool::global().size();
  r.context = o.context;
  r.streamed = o.streamed;

  std::mt19937_64 rng(o.seed);
  auto random_ids = [&](int n) {
    std::vector<int32_t> v(n);
    for (auto& x : v) x = static_cast<int32_t>(rng() % uint64_t(std::max(1, c.vocab - 256)));
    return v;
  };
  if (!o.streamed) {
    // Resident: fault every expert page in before timing, so no pass waits on the disk.
    volatile uint8_t sink = 0;
    std::vector<ExpertView> views;
    std::vector<int> all(c.experts);
    for (int e = 0; e < c.experts; ++e) all[e] = e;
    for (int l = 0; l < c.layers; ++l) {
      if (!c.is_moe(l)) continue;
      model->experts().acquire(l, all, views);
      const auto& locs = model->weights().experts[l];
      for (int e = 0; e < c.experts; ++e) {
        const uint8_t* parts[6] = {views[e].w1_packed, views[e].w1_scale,  views[e].w2_packed,
                                   views[e].w2_scale,  views[e].w3_packed, views[e].w3_scale};
        for (int k = 0; k < 6; ++k)
          for (uint64_t off = 0; off < locs[e].part_bytes[k]; off += 4096) sink = sink + parts[k][off];
      }
    }
  }
  K3Session s(*model);
  if (o.context > 0) s.prefill(random_ids(o.context));
  std::vector<float> logits;
  for (int T : o.rows) {
    std::vector<double> times;
    double experts = 0, bytes = 0;
    for (int rep = 0; rep <= o.reps; ++rep) {
      const auto ids = random_ids(T);
      const ExpertCounters before = model->experts().counters();
      PassOptions po;
      po.all_logits = T > 1;
      po.partial_commit = T > 1;
      const auto t0 = Clock::now();
      s.stage(ids, logits, po);
      s.commit(1);  // the worst case: every guess rejected, one row kept
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      const ExpertCounters after = model->experts().counters();
      if (rep == 0) continue;  // warm-up: page cache, allocator, thread pool
      times.push_back(dt);
      experts += double(after.requests - before.requests);
      bytes += double(after.bytes_read - before.bytes_read);
    }
    std::sort(times.begin(), times.end());
    VerifyBenchRow row;
    row.T = T;
    row.median_s = times.empty() ? 0 : times[times.size() / 2];
    row.min_s = times.empty() ? 0 : times.front();
    row.experts_per_pass = o.reps > 0 ? experts / o.reps : 0;
    row.expert_mb_per_pass = o.reps > 0 ? bytes / o.reps / 1e6 : 0;
    r.rows.push_back(row);
  }
  double base = 0;
  for (const auto& row : r.rows)
    if (row.T == 1) base = row.median_s;
  for (auto& row : r.rows) {
    if (base <= 0) break;
    row.cost_ratio = row.median_s / base;
    row.breakeven_tokens = std::max(0.0, row.cost_ratio - 1);
    row.breakeven_acceptance = breakeven_acceptance(row.T, row.cost_ratio);
  }
  return r;
}

std::string VerifyBenchResult::json() const {
  nlohmann::ordered_json rs = nlohmann::ordered_json::array();
  for (const auto& row : rows)
    rs.push_back({{"T", row.T},
                  {"median_seconds", row.median_s},
                  {"min_seconds", row.min_s},
                  {"experts_per_pass", row.experts_per_pass},
                  {"expert_mb_per_pass", row.expert_mb_per_pass},
                  {"cost_ratio_vs_T1", row.cost_ratio},
                  {"breakeven_accepted_per_pass", row.breakeven_tokens},
                  {"breakeven_per_guess_acceptance", row.breakeven_acceptance}});
  nlohmann::ordered_json j = {{"bench", "verify-pass"},
                              {"model_root", model_root},
                              {"experts", streamed ? "streamed" : "resident"},
                              {"expert_source", expert_source},
                              {"cpu_kernels", cpu_kernels},
                              {"threads", threads},
                              {"context_tokens", context},
                              {"rows", rs}};
  return j.dump(2);
}

}  // namespace deltafin
