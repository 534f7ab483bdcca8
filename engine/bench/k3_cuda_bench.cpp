#include "bench/k3_cuda_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <random>
#include <set>
#include <thread>

#include "base/error.h"
#include "base/thread_pool.h"
#include "cuda/cuda_support.h"
#include "cuda/k3/k3_ops.h"
#include "cuda/k3_cuda_model.h"
#include "cuda/vram_expert_cache.h"
#include "cpu/gemm.h"
#include "bench/verifier_bench.h"
#include "bench/verifier_direct_expert_source.h"
#include "store/tiered_expert_source.h"

namespace deltafin::cuda {

namespace {
using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

std::vector<int32_t> random_ids(std::mt19937_64& rng, int n, int vocab) {
  std::vector<int32_t> v(n);
  for (auto& x : v) x = static_cast<int32_t>(rng() % uint64_t(std::max(1, vocab - 256)));
  return v;
}

uint64_t layer_spine_bytes(const LayerWeights& L) {
  uint64_t n = (L.input_norm.size() + L.post_attn_norm.size() + L.attn_res.w.size() + L.mlp_res.w.size()) * 4;
  if (L.mla) {
    const MlaWeights& m = L.mla_w;
    n += m.q_a_proj.bytes() + m.q_b_proj.bytes() + m.kv_a_proj.bytes() + m.kv_b_proj.bytes() + m.o_proj.bytes() +
         m.g_proj.bytes() + (m.q_a_norm.size() + m.kv_a_norm.size()) * 4;
  } else {
    const KdaWeights& k = L.kda;
    n +=
        k.q_proj.bytes() + k.k_proj.bytes() + k.v_proj.bytes() + k.g_proj.bytes() + k.o_proj.bytes() + k.f_a.bytes() +
        k.f_b.bytes() + k.b_proj.bytes() +
        (k.q_conv.size() + k.k_conv.size() + k.v_conv.size() + k.a_log.size() + k.dt_bias.size() + k.o_norm.size()) * 4;
  }
  if (!L.moe) return n + L.dense.gate.bytes() + L.dense.up.bytes() + L.dense.down.bytes();
  const MoeWeights& w = L.moe_w;
  n += w.router.bytes() + w.latent_down.bytes() + w.latent_up.bytes() +
       (w.router_bias.size() + w.latent_norm.size()) * 4;
  if (w.has_shared) n += w.shared.gate.bytes() + w.shared.up.bytes() + w.shared.down.bytes();
  return n;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Roofline measure_roofline(const std::string& file, std::ostream& log) {
  Roofline r;
  {  // HBM: a 2 GiB device-to-device copy, best of 5
    const size_t n = size_t(2) << 30;
    DeviceBuffer a(n), b(n);
    a.fill_byte(1);
    OwnedEvent e0(true), e1(true);
    float best = 1e30f;
    for (int i = 0; i < 5; ++i) {
      e0.record(nullptr);
      check_cuda(cudaMemcpyAsync(b.data(), a.data(), n, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync");
      e1.record(nullptr);
      e1.sync();
      best = std::min(best, e1.since(e0));
    }
    r.hbm_gbs = 2.0 * double(n) / (best / 1e3) / 1e9;
  }
  {  // PCIe: 1 GiB pinned -> device, best of 5
    const size_t n = size_t(1) << 30;
    PinnedBuffer h(n);
    std::memset(h.as(), 1, n);
    DeviceBuffer d(n);
    OwnedEvent e0(true), e1(true);
    float best = 1e30f;
    for (int i = 0; i < 5; ++i) {
      e0.record(nullptr);
      check_cuda(cudaMemcpyAsync(d.data(), h.as(), n, cudaMemcpyHostToDevice, nullptr), "cudaMemcpyAsync");
      e1.record(nullptr);
      e1.sync();
      best = std::min(best, e1.since(e0));
    }
    r.h2d_gbs = double(n) / (best / 1e3) / 1e9;
  }
  if (!file.empty()) {  // disk: O_DIRECT 16 MiB reads, 8 threads, up to 4 GiB of the file
    const int fd = ::open(file.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) {
      log << "disk roofline: cannot open " << file << " with O_DIRECT\n";
    } else {
      const off_t size = ::lseek(fd, 0, SEEK_END);
      const size_t chunk = size_t(16) << 20;
      const int64_t chunks = std::min<int64_t>(int64_t(size) / int64_t(chunk), 256);
      std::atomic<int64_t> next{0};
      std::atomic<uint64_t> got{0};
      const auto t0 = Clock::now();
      std::vector<std::thread> th;
      for (int i = 0; i < 8; ++i)
        th.emplace_back([&] {
          void* buf = nullptr;
          if (posix_memalign(&buf, 4096, chunk) != 0) return;
          for (int64_t c; (c = next++) < chunks;) {
            const ssize_t k = ::pread(fd, buf, chunk, off_t(c) * off_t(chunk));
            if (k > 0) got += uint64_t(k);
          }
          std::free(buf);
        });
      for (auto& t : th) t.join();
      r.disk_gbs = double(got) / secs(t0) / 1e9;
      ::close(fd);
    }
  }
  log << std::fixed << std::setprecision(1) << "roofline: disk O_DIRECT " << r.disk_gbs << " GB/s, PCIe H2D (pinned) "
      << r.h2d_gbs << " GB/s, HBM (D2D copy, read+write) " << r.hbm_gbs << " GB/s\n";
  return r;
}

void bench_layers(const std::string& root, const std::vector<int>& rows, int context, int reps, const Roofline& roof,
                  std::ostream& out) {
  auto host = K3Model::load(root);
  const K3Config& c = host->config();
  CudaK3Model::Options o;
  o.max_rows = *std::max_element(rows.begin(), rows.end());
  o.max_context = context + int64_t(reps + 2) * o.max_rows * int64_t(rows.size()) + 16;
  CudaK3Model model(*host, o);
  CudaK3Session s(model);
  std::mt19937_64 rng(7);
  if (context > 0) s.prefill(random_ids(rng, context, c.vocab));
  s.set_layer_timing(true);
  // Timed where decode runs: replayed CUDA graphs record the layer events as graph nodes
  // (DELTAFIN_CUDA_GRAPHS=off times eager passes).
  out << "| layer | kind | T | pass | median ms | distinct experts | MB read | floor ms @" << std::setprecision(0)
      << roof.hbm_gbs << " GB/s | ratio |\n| ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n";
  std::vector<float> logits;
  for (int T : rows) {
    std::vector<std::vector<double>> ms(c.layers);
    std::vector<double> experts(c.layers, 0);
    bool replayed = true;
    for (int rep = 0; rep <= reps; ++rep) {
      ForwardTrace tr;
      tr.routing = true;
      PassOptions po;
      po.partial_commit = true;
      po.all_logits = true;
      po.trace = &tr;
      s.stage(random_ids(rng, T, c.vocab), logits, po);
      const auto lm = s.layer_ms();
      s.commit(1);
      if (rep == 0) continue;
      replayed = replayed && s.last_pass_replayed();
      int mi = 0;
      for (int l = 0; l < c.layers; ++l) {
        ms[l].push_back(lm[l]);
        if (!c.is_moe(l)) continue;
        std::set<int> d(tr.topk_ids[mi].begin(), tr.topk_ids[mi].end());
        experts[l] += double(d.size()) / reps;
        ++mi;
      }
    }
    for (int l = 0; l < c.layers; ++l) {
      const bool mla = c.is_mla[l];
      double bytes = double(layer_spine_bytes(host->weights().layers[l])) + experts[l] * double(c.expert_bytes());
      // The session's state is fp64 (8 bytes a value).
      if (mla) bytes += double(s.n_past()) * c.mla_cache_width() * 8 * 2;     // cache read; rows written
      else bytes += 2.0 * c.kda_heads * c.kda_head_dim * c.kda_head_dim * 8;  // recurrent state in and out
      const double floor_ms = bytes / (roof.hbm_gbs * 1e9) * 1e3;
      const double med = median(ms[l]);
      out << "| " << l << " | " << (mla ? "MLA" : "KDA") << (c.is_moe(l) ? "+MoE" : "+dense") << " | " << T << " | "
          << (replayed ? "graph" : "eager") << " | " << std::setprecision(3) << med << " | " << std::setprecision(1)
          << experts[l] << " | " << std::setprecision(0) << bytes / 1e6 << " | " << std::setprecision(3) << floor_ms
          << " | " << std::setprecision(2) << med / floor_ms << " |\n";
    }
  }
}

void bench_verify(const std::string& root, const std::vector<int>& rows, int context, int reps, const std::string& mode,
                  std::ostream& out) {
  if (mode != "resident" && mode != "ram" && mode != "disk")
    throw Error("unknown expert mode '" + mode + "'", "use resident, ram or disk");
  K3Model::Options mo;
  if (mode == "disk") {
    auto ck = Checkpoint::open(root);
    const K3Config cfg = K3Config::load(root + "/config.json");
    const K3Weights w = K3Weights::bind(*ck, cfg);
    std::vector<std::string> paths;
    for (uint32_t i = 0; i < ck->shard_names().size(); ++i) paths.push_back(ck->shard_path(i));
    mo.experts = std::make_unique<DirectReadExpertSource>(paths, w.experts);
  }
  auto host = K3Model::load(root, std::move(mo));
  const K3Config& c = host->config();
  CudaK3Model::Options o;
  o.max_rows = std::max(16, *std::max_element(rows.begin(), rows.end()));
  o.max_context = context + int64_t(reps + 2) * int64_t(rows.size()) + 16;
  o.preload = mode == "resident";
  CudaK3Model model(*host, o);
  CudaK3Session s(model);
  std::mt19937_64 rng(11);
  if (context > 0) s.prefill(random_ids(rng, context, c.vocab));
  out << "experts " << mode << " (host source: " << host->experts().describe() << "), context " << context << ", "
      << reps
      << " reps\n\n| T | median ms | min ms | experts copied / pass | MB H2D / pass | c(T)/c(1) | break-even accepted "
         "/ pass | break-even per-guess acceptance |\n"
         "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  std::vector<float> logits;
  double base = 0;
  for (int T : rows) {
    std::vector<double> t;
    double copied = 0, bytes = 0;
    for (int rep = 0; rep <= reps; ++rep) {
      const auto ids = random_ids(rng, T, c.vocab);
      if (mode != "resident") model.experts().evict_all();
      const VramTierCounters before = model.experts().counters();
      PassOptions po;
      po.all_logits = T > 1;
      po.partial_commit = T > 1;
      const auto t0 = Clock::now();
      s.stage(ids, logits, po);
      s.commit(1);
      s.sync();
      const double dt = secs(t0);
      const VramTierCounters after = model.experts().counters();
      if (rep == 0) continue;
      t.push_back(dt);
      copied += double(after.misses - before.misses) / reps;
      bytes += double(after.bytes_h2d - before.bytes_h2d) / reps;
    }
    const double med = median(t);
    if (T == rows.front()) base = med;
    const double ratio = med / base;
    out << "| " << T << " | " << std::fixed << std::setprecision(3) << med * 1e3 << " | "
        << *std::min_element(t.begin(), t.end()) * 1e3 << " | " << std::setprecision(1) << copied << " | "
        << std::setprecision(0) << bytes / 1e6 << " | " << std::setprecision(2) << ratio << " | " << ratio - 1 << " | "
        << std::setprecision(3) << (T > 1 ? breakeven_acceptance(T, ratio) : 0.0) << " |\n";
  }
}

void bench_stream(const std::string& root, uint64_t ram_bytes, int vram_slots, int warmup, int tokens,
                  const Roofline& roof, std::ostream& out) {
  K3Model::Options mo;
  StoreOptions so;
  so.ram_budget = ram_bytes;
  so.lock_memory = false;
  mo.store = so;
  auto host = K3Model::load(root, std::move(mo));
  const K3Config& c = host->config();
  CudaK3Model::Options o;
  o.max_rows = std::max(1, std::min(16, vram_slots / std::max(1, c.top_k)));  // a pass's experts must fit the tier
  o.max_context = 64 + warmup + tokens + 16;
  o.expert_slots = vram_slots;
  o.preload = false;
  CudaK3Model model(*host, o);
  CudaK3Session s(model);
  std::mt19937_64 rng(13);
  std::vector<float> logits = s.prefill(random_ids(rng, 16, c.vocab));
  std::vector<int32_t> ids;
  auto step = [&] {
    const int32_t id = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ids.push_back(id);
    PassOptions po;
    po.all_logits = false;
    s.stage(std::span<const int32_t>(&id, 1), logits, po);
    s.commit(1);
  };
  for (int i = 0; i < warmup; ++i) step();
  model.experts().reset_counters();
  const ExpertCounters h0 = host->experts().counters();
  const auto t0 = Clock::now();
  for (int i = 0; i < tokens; ++i) step();
  const double dt = secs(t0);
  const VramTierCounters v = model.experts().counters();
  const ExpertCounters h = host->experts().counters() - h0;
  const double ram_req = double(h.requests), ram_hits = double(h.ram_hits);
  const double disk_bytes = double(h.bytes_read) / tokens;
  const double h2d_bytes = double(v.bytes_h2d) / tokens;
  uint64_t spine = 0;
  for (const auto& L : host->weights().layers) spine += layer_spine_bytes(L);
  const double hbm_bytes = double(spine) + double(v.requests) / tokens * double(c.expert_bytes());
  const double t_disk = disk_bytes / (roof.disk_gbs * 1e9), t_pcie = h2d_bytes / (roof.h2d_gbs * 1e9),
               t_hbm = hbm_bytes / (roof.hbm_gbs * 1e9);
  out << std::fixed << "experts: " << c.moe_layers() << " MoE layers x " << c.experts << " of " << std::setprecision(2)
      << c.expert_bytes() / 1e6 << " MB; VRAM tier " << vram_slots << " slots (" << std::setprecision(0)
      << vram_slots * double(model.experts().slot_bytes()) / 1e6 << " MB), RAM tier " << ram_bytes / 1e6 << " MB ("
      << host->experts().describe() << ")\n"
      << "decode: " << tokens << " tokens after " << warmup << " warm-up tokens: " << std::setprecision(2)
      << tokens / dt << " tokens/s (" << std::setprecision(1) << dt / tokens * 1e3 << " ms/token)\n"
      << "VRAM tier: " << v.requests << " requests, hit rate " << std::setprecision(3)
      << (v.requests ? double(v.hits) / v.requests : 0) << ", " << std::setprecision(1) << h2d_bytes / 1e6
      << " MB/token over PCIe; " << v.direct << " of " << v.misses << " misses copied straight from the pinned RAM tier"
      << (model.experts().direct_copies() ? "" : " (direct copies off)")
      << (model.experts().direct_note().empty() ? "" : "; " + model.experts().direct_note()) << "\n"
      << "RAM tier (VRAM misses): " << ram_req << " requests, hit rate " << std::setprecision(3)
      << (ram_req > 0 ? ram_hits / ram_req : 0) << ", " << std::setprecision(1) << disk_bytes / 1e6
      << " MB/token from disk\n"
      << "HBM bytes/token (spine + routed experts read): " << hbm_bytes / 1e6 << " MB\n"
      << "roofline per token: disk " << std::setprecision(2) << t_disk * 1e3 << " ms + PCIe " << t_pcie * 1e3
      << " ms + HBM " << t_hbm * 1e3 << " ms; bound with perfect overlap " << std::max({t_disk, t_pcie, t_hbm}) * 1e3
      << " ms (" << 1.0 / std::max({t_disk, t_pcie, t_hbm, 1e-12}) << " tokens/s), serial sum "
      << (t_disk + t_pcie + t_hbm) * 1e3 << " ms; measured " << dt / tokens * 1e3 << " ms\n"
      << "greedy ids (warm-up and timed):";
  for (int32_t id : ids) out << ' ' << id;
  out << "\n";
}

void bench_placement(const std::string& root, const std::vector<int>& rows, int reps, const Roofline& roof,
                     std::ostream& out) {
  const int max_rows = *std::max_element(rows.begin(), rows.end());
  K3Model::Options mo;
  StoreOptions so;  // the RAM tier, default budget
  so.lock_memory = false;
  mo.store = so;
  auto host = K3Model::load(root, std::move(mo));
  const K3Config& c = host->config();
  int layer = 0;
  while (layer < c.layers && !c.is_moe(layer)) ++layer;
  if (layer == c.layers) throw Error(root + " has no MoE layer", "use a K3 checkpoint with routed experts");
  const int n = std::min(c.top_k, c.experts), Z = c.latent, I = c.moe_intermediate;
  std::vector<int> ids(n);
  for (int e = 0; e < n; ++e) ids[e] = e;
  ExpertSource& src = host->experts();
  {  // into the RAM tier before anything is timed
    auto b = src.request(layer, ids);
    for (int i = 0; i < n; ++i) b->next();
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::vector<float> x(size_t(max_rows) * Z);
  for (auto& v : x) v = uni(rng);
  const std::vector<double> x64(x.begin(), x.end());  // the CPU forward's activations are fp64
  const double bytes = double(n) * double(c.expert_bytes());

  // CPU: the CPU session's expert MLPs, the n experts as one group (every row through each of them)
  // on every pool thread.
  std::vector<double> cpu_ms(rows.size());
  {
    std::vector<ExpertView> views;
    src.acquire(layer, ids, views);
    std::vector<double> xs(size_t(n) * size_t(max_rows) * Z), g(size_t(n) * size_t(max_rows) * I), u(g.size()),
        d(xs.size());
    for (size_t ri = 0; ri < rows.size(); ++ri) {
      const int r = rows[ri];
      std::vector<size_t> row0(size_t(n) + 1);
      for (int e = 0; e <= n; ++e) row0[size_t(e)] = size_t(e) * size_t(r);
      for (int e = 0; e < n; ++e)
        std::copy(x64.begin(), x64.begin() + size_t(r) * Z, xs.begin() + std::ptrdiff_t(row0[size_t(e)] * Z));
      std::vector<double> t;
      for (int rep = 0; rep <= reps; ++rep) {
        const auto t0 = Clock::now();
        routed_expert_group(c, views, row0, xs.data(), g.data(), u.data(), d.data());
        if (rep) t.push_back(secs(t0) * 1e3);  // the first round warms caches and the pool
      }
      cpu_ms[ri] = median(t);
    }
  }

  // GPU: the VRAM tier's fill of the n experts (emptied first), then the expert kernel on them.
  VramExpertCache tier(src, Z, I, n);  // the row layout the forward's fp64 kernels read
  OwnedStream st;
  std::vector<MxExpert> dev;
  auto fill_ms = [&](bool direct) {
    tier.set_direct_copies(direct);
    std::vector<double> t;
    for (int rep = 0; rep <= reps; ++rep) {
      tier.evict_all();
      const auto t0 = Clock::now();
      tier.gather(layer, ids, dev, st.opaque());
      st.sync();
      if (rep) t.push_back(secs(t0) * 1e3);
    }
    return median(t);
  };
  const double staged_ms = fill_ms(false), direct_ms = fill_ms(true);
  const std::string note = tier.direct_note();
  const bool direct_used = tier.counters().direct > 0;
  // The forward's expert kernel (k3::routed_experts, fp64), every row using all n experts.
  DeviceBuffer dz(size_t(max_rows) * Z * 8), dy(size_t(max_rows) * Z * 8), table(dev.size() * sizeof(MxExpert));
  DeviceBuffer scratch(size_t(k3::routed_experts_scratch(max_rows, n, Z, I)) * 8);
  dz.upload(x64.data(), x64.size() * 8);
  table.upload(dev.data(), dev.size() * sizeof(MxExpert));
  std::vector<double> gpu_ms(rows.size());
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    const int r = rows[ri];
    std::vector<int32_t> slot(size_t(r) * n);
    std::vector<double> w(slot.size(), 1.0 / n);
    for (size_t a = 0; a < slot.size(); ++a) slot[a] = int32_t(a % n);
    DeviceBuffer dslot(slot.size() * 4), dw(w.size() * 8);
    dslot.upload(slot.data(), slot.size() * 4);
    dw.upload(w.data(), w.size() * 8);
    std::vector<double> t;
    OwnedEvent e0(true), e1(true);
    for (int rep = 0; rep <= reps; ++rep) {
      e0.record(st.get());
      k3::routed_experts(table.as<MxExpert>(), dslot.as<int32_t>(), dw.as<double>(), r, n, Z, I, dz.as<double>(),
                         scratch.as<double>(), dy.as<double>(), st.opaque());
      e1.record(st.get());
      e1.sync();
      if (rep) t.push_back(e1.since(e0));
    }
    gpu_ms[ri] = median(t);
  }

  out << std::fixed << "placement of RAM-resident experts: " << n << " experts of layer " << layer << " ("
      << std::setprecision(1) << bytes / 1e6 << " MB), RAM tier: " << src.describe()
      << "; CPU: " << ThreadPool::global().size() << " threads, " << kernels::active().name
      << " kernels; PCIe roofline " << roof.h2d_gbs << " GB/s\n"
      << "GPU fill (host RAM -> VRAM): through staging " << std::setprecision(3) << staged_ms << " ms ("
      << std::setprecision(1) << bytes / (staged_ms * 1e6) << " GB/s), straight from the pinned RAM tier "
      << std::setprecision(3) << direct_ms << " ms (" << std::setprecision(1) << bytes / (direct_ms * 1e6) << " GB/s"
      << (direct_used ? ")" : ", NOT used: " + (note.empty() ? std::string("the source has no arena") : note) + ")")
      << "\n\n| rows per expert | CPU ms | CPU GB/s | GPU fill + kernel ms | GPU kernel ms | faster | ratio | CPU "
         "share when both work |\n"
      << "| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n";
  const double fill = std::min(staged_ms, direct_ms);
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    const double g = fill + gpu_ms[ri], cpu = cpu_ms[ri];
    // Both at once (the CPU takes a share s of the experts, the GPU the rest): s = g / (cpu + g)
    // balances them; the pair then finishes in cpu * g / (cpu + g).
    out << "| " << rows[ri] << " | " << std::setprecision(2) << cpu << " | " << std::setprecision(1)
        << bytes / (cpu * 1e6) << " | " << std::setprecision(3) << g << " | " << gpu_ms[ri] << " | "
        << (g <= cpu ? "GPU" : "CPU") << " | " << std::setprecision(2) << std::max(g, cpu) / std::min(g, cpu) << "x | "
        << std::setprecision(2) << g / (cpu + g) << " (" << cpu * g / (cpu + g) << " ms) |\n";
  }
}

}  // namespace deltafin::cuda
