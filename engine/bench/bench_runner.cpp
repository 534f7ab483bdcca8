#include "bench/bench_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sys/mman.h>
#include <sys/resource.h>

#include "base/error.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "runtime/generate.h"
#include "runtime/k3_model.h"
#include "runtime/k3_weights.h"
#include "bench/gpu_bench_session.h"
#include "bench/traced_expert_source.h"
#include "store/read_engine.h"

namespace deltafin {

namespace {
using Clock = std::chrono::steady_clock;

nlohmann::json counters_json(const ExpertCounters& c) {
  return {{"requests", c.requests},
          {"ram_hits", c.ram_hits},
          {"disk_reads", c.disk_reads},
          {"bytes_read", c.bytes_read},
          {"prefetch_issued", c.prefetch_issued},
          {"prefetch_used", c.prefetch_used},
          {"prefetch_wasted", c.prefetch_wasted},
          {"prefetch_cancelled", c.prefetch_cancelled},
          {"prefetch_skipped", c.prefetch_skipped},
          {"evictions", c.evictions},
          {"read_seconds", c.read_seconds},
          {"read_depth_seconds", c.read_depth_seconds},
          {"io_preemptions", c.io_preemptions},
          {"wait_seconds", c.wait_seconds},
          {"bytes_needed", c.bytes_needed},
          {"guessed", {c.guessed[0], c.guessed[1]}},
          {"guessed_right", {c.guessed_right[0], c.guessed_right[1]}},
          {"guessed_demand", {c.guessed_demand[0], c.guessed_demand[1]}}};
}

nlohmann::json vram_json(const BenchVram& v) {
  return {{"requests", v.requests},   {"hits", v.hits},     {"misses", v.misses},
          {"bytes_h2d", v.bytes_h2d}, {"direct", v.direct}, {"fill_seconds", v.fill_seconds}};
}

BenchVram vram_of(const DecodeSession& s) {
  BenchVram v;
  if (const auto t = s.vram_tier()) {
    v.requests = t->requests;
    v.hits = t->hits;
    v.misses = t->misses;
    v.bytes_h2d = t->bytes_h2d;
    v.direct = t->direct;
    v.fill_seconds = t->fill_seconds;
  }
  return v;
}

void add_to(BenchVram& a, const BenchVram& d) {
  a.requests += d.requests;
  a.hits += d.hits;
  a.misses += d.misses;
  a.bytes_h2d += d.bytes_h2d;
  a.direct += d.direct;
  a.fill_seconds += d.fill_seconds;
}

void add_to(ExpertCounters& a, const ExpertCounters& d) {
  a.requests += d.requests;
  a.ram_hits += d.ram_hits;
  a.disk_reads += d.disk_reads;
  a.bytes_read += d.bytes_read;
  a.net_fetches += d.net_fetches;
  a.bytes_fetched += d.bytes_fetched;
  a.prefetch_issued += d.prefetch_issued;
  a.prefetch_used += d.prefetch_used;
  a.prefetch_wasted += d.prefetch_wasted;
  a.prefetch_cancelled += d.prefetch_cancelled;
  a.prefetch_skipped += d.prefetch_skipped;
  a.evictions += d.evictions;
  a.bytes_needed += d.bytes_needed;
  for (int k = 0; k < 2; ++k) {
    a.guessed[k] += d.guessed[k];
    a.guessed_right[k] += d.guessed_right[k];
    a.guessed_demand[k] += d.guessed_demand[k];
  }
  a.read_seconds += d.read_seconds;
  a.read_depth_seconds += d.read_depth_seconds;
  a.io_preemptions += d.io_preemptions;
  a.wait_seconds += d.wait_seconds;
}

// Bytes over the wall time with at least one read in flight, both phases.
double in_run_gbps(const BenchRun& r) {
  const double sec = r.prefill.read_seconds + r.decode.read_seconds;
  return sec > 0 ? double(r.prefill.bytes_read + r.decode.bytes_read) / sec / 1e9 : 0;
}

// The disk's rate around a run: the mean of the probes either side of it, the one probe
// where there is only one, the bench's median where there is none.
double bracketing_probe_gbps(const BenchRun& r, double median_gbps) {
  if (r.probe_gbps > 0 && r.probe_after_gbps > 0) return (r.probe_gbps + r.probe_after_gbps) / 2;
  if (r.probe_gbps > 0) return r.probe_gbps;
  return r.probe_after_gbps > 0 ? r.probe_after_gbps : median_gbps;
}

struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {med, v.front(), v.back()};
}

// Stolen CPU seconds so far, summed over all CPUs (0 where /proc/stat has none).
double steal_seconds() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  uint64_t v[8] = {};
  if (!(f >> cpu) || cpu != "cpu") return 0;
  for (auto& x : v)
    if (!(f >> x)) return 0;
  const long hz = ::sysconf(_SC_CLK_TCK);
  return hz > 0 ? double(v[7]) / double(hz) : 0;
}

// Kernel CPU seconds of this process so far.
double sys_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_stime.tv_sec) + 1e-6 * double(u.ru_stime.tv_usec);
}

// One run of the workload: on a fresh CPU session of `m`, or with `gpu`, on that GPU session (reset
// first; its VRAM tier keeps what earlier runs left). `traced` records the run's passes; with
// `replay`, each decode step's experts (replay[k + 1] before the k-th step) are preloaded outside
// the step's time and counters: into the RAM tier, or on the GPU into the emptied VRAM tier. With
// `empty_vram` (GPU) the VRAM tier is emptied before every decode step, so that the host tier sees
// every expert a step asks for and `traced` records all of them.
BenchRun one_run(K3Model& m, DecodeSession* gpu, const BenchPlan& plan, const std::string& arm, const std::string& mode,
                 int rep, TracedExpertSource* traced = nullptr, const std::vector<PassRequests>* replay = nullptr,
                 bool empty_vram = false) {
  BenchRun r;
  r.arm = arm;
  r.mode = mode;
  r.rep = rep;
  std::optional<K3Session> cpu;
  DecodeSession* s = gpu;
  if (s) s->reset();
  else s = &cpu.emplace(m);
  const auto c0 = m.experts().counters();
  const BenchVram v0 = vram_of(*s);
  ExpertCounters c1;
  BenchVram v1, preloaded_vram;
  GenerateOptions g;
  g.max_new = plan.new_tokens;
  int produced = 0;
  Clock::time_point t_first;
  double steal_first = 0, sys_first = 0, preload = 0;
  ExpertCounters preloaded;
  auto res = generate(*s, plan.prompt, g, [&](int32_t) {
    if (produced++ == 0) {
      c1 = m.experts().counters();
      v1 = vram_of(*s);
      t_first = Clock::now();
      steal_first = steal_seconds();
      sys_first = sys_seconds();
    }
    if (traced) traced->cut();
    if (replay && traced && size_t(produced) < replay->size()) {
      const auto t0 = Clock::now();
      const auto before = m.experts().counters();
      const BenchVram vbefore = vram_of(*s);
      if (gpu) preload_vram(*gpu, (*replay)[produced]);
      else traced->preload((*replay)[produced]);
      add_to(preloaded, m.experts().counters() - before);
      add_to(preloaded_vram, vram_of(*s) - vbefore);
      preload += std::chrono::duration<double>(Clock::now() - t0).count();
    } else if (gpu && empty_vram) {
      preload_vram(*gpu, {});
    }
    return true;
  });
  const auto c2 = m.experts().counters();
  const BenchVram v2 = vram_of(*s);
  r.ids = res.ids;
  r.prefill_seconds = res.stats.prefill_seconds;
  r.first_token_seconds = res.stats.first_token_seconds;
  // Decode: every token after the first, each one forward pass.
  const double decode = std::chrono::duration<double>(Clock::now() - t_first).count() - preload;
  r.preload_seconds = preload;
  r.decode_seconds_per_token = plan.new_tokens > 1 ? decode / (plan.new_tokens - 1) : 0;
  r.decode_steal_seconds_per_token = plan.new_tokens > 1 ? (steal_seconds() - steal_first) / (plan.new_tokens - 1) : 0;
  r.decode_sys_seconds_per_token = plan.new_tokens > 1 ? (sys_seconds() - sys_first) / (plan.new_tokens - 1) : 0;
  r.compute_threads = ThreadPool::global().size();
  r.prefill = c1 - c0;
  r.decode = c2 - c1 - preloaded;
  if (gpu) {
    r.gpu = true;
    r.prefill_vram = v1 - v0;
    r.decode_vram = v2 - v1 - preloaded_vram;
    const auto t = gpu->vram_tier();
    r.vram_slots = t ? t->slot_count : 0;
    r.vram_all_resident = t && t->all_resident;
  }
  return r;
}

// A model for one arm. RAM-tier arms get their store wrapped in a TracedExpertSource (the compute
// floor replays what a run asked for); `ck` backs that store and outlives the model.
struct ArmModel {
  std::unique_ptr<Checkpoint> ck;
  std::unique_ptr<K3Model> m;
  TracedExpertSource* traced = nullptr;
};

ArmModel load_arm(const std::string& root, const BenchArm& a) {
  ArmModel l;
  K3Model::Options o;
  o.spine = a.spine;
  if (a.store) {
    const auto cfg = K3Config::load(root + "/config.json");
    l.ck = Checkpoint::open(root);
    auto w = K3Weights::bind(*l.ck, cfg);
    StoreOptions so = *a.store;
    if (so.stream_slots < 0) so.stream_slots = 2 * cfg.top_k;
    if (a.compute_floor) {
      // A cache of one decode step's experts, filled before each step: the step never reads.
      int moe_layers = 0;
      for (int i = 0; i < cfg.layers; ++i) moe_layers += cfg.is_moe(i);
      so.ram_budget = UINT64_MAX / 2;
      so.max_slots = size_t(moe_layers) * cfg.top_k;
      so.policy = EvictionPolicy::Lru;
      so.prefetch = false;
    }
    auto t =
        std::make_unique<TracedExpertSource>(std::make_unique<TieredExpertSource>(*l.ck, std::move(w.experts), so));
    l.traced = t.get();
    o.experts = std::move(t);
  }
  l.m = K3Model::load(root, std::move(o));
  return l;
}

}  // namespace

void check_bench_arm(const BenchArm& a) {
  const std::string arm = "arm '" + a.name + "': ";
  if (a.vram_experts < 0) throw Error(arm + "--vram-experts must be positive", "give a number of VRAM expert slots");
  if (a.vram_experts > 0 && !a.cuda)
    throw Error(arm + "--vram-experts sizes the VRAM tier of a GPU arm", "add --device cuda, or drop --vram-experts");
  if (a.host_guesses && !a.cuda)
    throw Error(arm + "--host-guesses hands a GPU arm's guesses to the RAM tier (a CPU arm guesses already)",
                "add --device cuda, or drop --host-guesses");
  if (!a.cuda) return;
  if (!a.store) throw Error(arm + "--device cuda streams the experts through the RAM tier", "drop --mmap from the arm");
  if (a.spine)
    throw Error(arm + "--device cuda holds the whole spine in VRAM; --ram-budget plans a CPU arm's spine",
                "drop --ram-budget (--ram-cache GB sizes the RAM tier)");
  if (!bench_cuda_built())
    throw Error(arm + "--device cuda needs the CUDA backend, which this deltafin was built without",
                "rebuild with -DDELTAFIN_CUDA=ON, or drop --device cuda from the arm");
}

DecodeFloors decode_floors(const FloorInputs& in) {
  DecodeFloors f;
  f.disk = in.disk_gbps > 0 ? in.disk_bytes_per_token / (in.disk_gbps * 1e9) : 0;
  f.pcie = in.h2d_gbps > 0 ? in.h2d_bytes_per_token / (in.h2d_gbps * 1e9) : 0;
  f.has_compute = in.has_compute;
  f.compute = in.has_compute ? in.compute_seconds : 0;
  return f;
}

double floor_ratio(double seconds, double floor) { return floor > 0 ? seconds / floor : 0; }

namespace {
// Drops the page-cache copy of every shard (posix_fadvise DONTNEED).
void drop_shard_pages(const Checkpoint& ck) {
  for (uint32_t s = 0; s < ck.shard_names().size(); ++s) {
    int fd = ::open(ck.shard_path(s).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}
}  // namespace

void make_experts_cold(const std::string& root) {
  auto ck = Checkpoint::open(root);
  drop_shard_pages(*ck);
  // Re-read the spine so that only experts are cold.
  uint64_t sum = 0;
  for (const auto& name : ck->tensor_names()) {
    if (name.find(".experts.") != std::string::npos) continue;
    const CatalogEntry* e = ck->find(name);
    const uint8_t* p = ck->data(*e);
    for (uint64_t o = 0; o < e->info->nbytes(); o += 4096) sum += p[o];
  }
  // Keep the page touches from being optimised away.
  asm volatile("" : : "r"(sum) : "memory");
}

BenchReport run_bench(const BenchPlan& plan, const std::vector<BenchArm>& arms,
                      const std::function<void(const std::string&)>& progress) {
  for (const auto& a : arms) check_bench_arm(a);
  if (std::any_of(arms.begin(), arms.end(), [](const BenchArm& a) { return a.cuda; })) require_gpu();
  BenchReport rep;
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  std::vector<double> probes, h2d_probes;
  uint32_t probe_seed = 12345;
  size_t awaiting_probe = 0;  // rep.runs from here on have no probe after them yet
  // drop_pages: the probe reads from a cold page cache. It reads experts only, so the spine is not
  // read back here: the arm that follows makes its own cold start (make_experts_cold).
  auto probe = [&](bool drop_pages) {
    if (drop_pages) drop_shard_pages(*Checkpoint::open(plan.model_root));
    const double g =
        measure_direct_read_gbps(plan.model_root, plan.bandwidth_experts, 16, &rep.io_engine, probe_seed++);
    probes.push_back(g);
    for (; awaiting_probe < rep.runs.size(); ++awaiting_probe) rep.runs[awaiting_probe].probe_after_gbps = g;
    say("O_DIRECT expert reads: " + std::to_string(g) + " GB/s (" + rep.io_engine + ", QD 16)");
    return g;
  };
  // Before each GPU arm's runs: the pinned host -> device rate, for the PCIe floor.
  auto probe_h2d = [&] {
    const double g = probe_h2d_gbps();
    h2d_probes.push_back(g);
    say("pinned host -> device copies: " + std::to_string(g) + " GB/s");
    return g;
  };
  // A GPU session holds the prompt, the decoded tokens and the one pass beyond.
  const int64_t gpu_context = int64_t(plan.prompt.size()) + plan.new_tokens + 1;
  // What the first traced CPU run asked for, pass by pass. GPU floor arms replay a trace of the GPU's
  // own routing (the first one's first run, with the VRAM tier emptied before every step, so that
  // the RAM tier sees every expert a step asks for; other GPU runs show it only the VRAM tier's
  // misses): a router near a tie may pick differently on the two backends without changing an id.
  std::vector<PassRequests> trace;
  std::optional<std::vector<PassRequests>> gpu_trace;
  for (int r = 0; r < plan.reps; ++r) {
    std::vector<const BenchArm*> order;
    for (const auto& a : arms) order.push_back(&a);
    if (r % 2) std::reverse(order.begin(), order.end());  // alternate so drift hits every arm alike
    for (const BenchArm* a : order) {
      ThreadPool::set_global_threads(a->threads);
      double g = plan.measure_bandwidth ? probe(true) : 0;  // the probe before the next run recorded
      const double h2d = a->cuda ? probe_h2d() : 0;
      make_experts_cold(plan.model_root);
      ArmModel l = load_arm(plan.model_root, *a);
      K3Model* m = l.m.get();
      if (r == 0) say(a->name + ": " + m->experts().describe());  // the queue depth it probed, among others
      // GPU arms: one session per arm and repetition (declared after the model: destroyed first),
      // so the warm run finds the VRAM tier as the cold run left it.
      std::unique_ptr<DecodeSession> gpu;
      // The GPU compute floor copies no guess ahead: its trace records every expert a step asks for
      // (a copy ahead would serve some from VRAM unrecorded) and its replay copies nothing in a step.
      if (a->cuda) gpu = open_gpu_bench_session(*m, gpu_context, a->vram_experts, a->host_guesses, !a->compute_floor);
      auto record = [&](BenchRun run) {
        run.probe_gbps = g;
        run.h2d_probe_gbps = h2d;
        run.threads = a->threads;
        run.ram_tier = a->store.has_value();
        say(a->name + " " + run.mode + " #" + std::to_string(r) + ": decode " +
            std::to_string(run.decode_seconds_per_token) + " s/token");
        rep.runs.push_back(std::move(run));
      };
      if (a->compute_floor && a->cuda) {
        if (!gpu_trace) {
          // The GPU's record of the workload is no cold run (the VRAM tier is emptied before every
          // step): it is kept as mode "trace", its ids checked like every run's. With every expert
          // resident the RAM tier saw nothing, and nothing needs replaying.
          record(one_run(*m, gpu.get(), plan, a->name, "trace", r, l.traced, nullptr, true));
          gpu_trace = l.traced->passes();
        }
        record(one_run(*m, gpu.get(), plan, a->name, "resident", r, l.traced, &*gpu_trace));
        continue;
      }
      if (a->compute_floor) {
        if (trace.empty()) {
          BenchRun t = one_run(*m, nullptr, plan, a->name, "cold", r, l.traced);
          trace = l.traced->passes();
          if (plan.cold) record(std::move(t));
        }
        record(one_run(*m, nullptr, plan, a->name, "resident", r, l.traced, &trace));
        continue;
      }
      if (plan.cold) {
        record(one_run(*m, gpu.get(), plan, a->name, "cold", r, l.traced));
        if (trace.empty() && l.traced && !a->cuda) trace = l.traced->passes();
        // Between a RAM-tier arm's cold and warm runs, a probe that ends the one's bracket and starts
        // the other's: each run's floor then takes the disk's rate from its own half minute, not the
        // arm's whole minute (the cloud disk's rate moves ±15 % in half a minute). It drops no pages:
        // the tier's reads are O_DIRECT, so the page cache holds no expert the cold run read, and the
        // warm run starts as the cold run left it. An mmap arm's warm run is its page cache: no probe.
        if (plan.warm && plan.measure_bandwidth && a->store.has_value()) g = probe(false);
      }
      if (plan.warm) {
        if (!plan.cold) one_run(*m, gpu.get(), plan, a->name, "fill", r);
        record(one_run(*m, gpu.get(), plan, a->name, "warm", r));
      }
    }
  }
  ThreadPool::set_global_threads(0);
  if (plan.measure_bandwidth && awaiting_probe < rep.runs.size()) probe(true);  // the last arm's after
  if (!probes.empty()) {
    std::sort(probes.begin(), probes.end());
    rep.direct_read_gbps = probes[probes.size() / 2];
  }
  if (!h2d_probes.empty()) {
    std::sort(h2d_probes.begin(), h2d_probes.end());
    rep.h2d_gbps = h2d_probes[h2d_probes.size() / 2];
  }
  for (const auto& run : rep.runs)
    if (run.ids != rep.runs.front().ids) {
      rep.ids_identical = false;
      rep.first_difference = run.arm + " " + run.mode + " #" + std::to_string(run.rep) + " differs from " +
                             rep.runs.front().arm + " " + rep.runs.front().mode;
      break;
    }
  return rep;
}

std::string BenchReport::json() const {
  nlohmann::json j;
  j["direct_read_gbps"] = direct_read_gbps;
  j["h2d_gbps"] = h2d_gbps;
  j["io_engine"] = io_engine;
  j["ids_identical"] = ids_identical;
  if (!ids_identical) j["first_difference"] = first_difference;
  j["runs"] = nlohmann::json::array();
  std::map<std::pair<std::string, std::string>, std::vector<const BenchRun*>> groups;
  for (const auto& r : runs) {
    j["runs"].push_back({{"arm", r.arm},
                         {"mode", r.mode},
                         {"rep", r.rep},
                         {"prefill_seconds", r.prefill_seconds},
                         {"first_token_seconds", r.first_token_seconds},
                         {"decode_seconds_per_token", r.decode_seconds_per_token},
                         {"decode_steal_cpu_seconds_per_token", r.decode_steal_seconds_per_token},
                         {"decode_sys_cpu_seconds_per_token", r.decode_sys_seconds_per_token},
                         {"compute_threads", r.compute_threads},
                         {"probe_gbps", r.probe_gbps},
                         {"probe_after_gbps", r.probe_after_gbps},
                         {"ids", r.ids},
                         {"prefill_counters", counters_json(r.prefill)},
                         {"decode_counters", counters_json(r.decode)},
                         {"device", r.gpu ? "cuda" : "cpu"}});
    if (r.gpu) {
      auto& jr = j["runs"].back();
      jr["h2d_probe_gbps"] = r.h2d_probe_gbps;
      jr["vram_slots"] = r.vram_slots;
      jr["vram_all_resident"] = r.vram_all_resident;
      jr["prefill_vram"] = vram_json(r.prefill_vram);
      jr["decode_vram"] = vram_json(r.decode_vram);
    }
    groups[{r.arm, r.mode}].push_back(&r);
  }
  // The compute floor of this workload: decode with every expert already in RAM,
  // i.e. the warm runs that read nothing from disk (e.g. an arm whose budget
  // holds every expert the workload touches), per compute thread count.
  std::map<int, std::vector<double>> resident;
  for (const auto& r : runs)
    if (!r.gpu && r.ram_tier && (r.mode == "warm" || r.mode == "resident") && r.decode.disk_reads == 0 &&
        r.decode.requests > 0)
      resident[r.threads].push_back(r.decode_seconds_per_token);
  std::map<int, double> compute_floor;
  j["compute_floors"] = nlohmann::json::array();
  for (const auto& [threads, v] : resident) {
    compute_floor[threads] = spread(v).median;
    j["compute_floors"].push_back(
        {{"threads", threads}, {"seconds_per_token", compute_floor[threads]}, {"runs", v.size()}});
  }
  // The GPU compute floor: GPU decode with every expert already in VRAM, i.e. the warm or resident
  // GPU runs that copied nothing host -> device (a --device cuda --compute-floor arm's replay, or a
  // tier that holds every expert of the model).
  std::vector<double> gpu_resident;
  for (const auto& r : runs)
    if (r.gpu && (r.mode == "warm" || r.mode == "resident") && r.decode_vram.bytes_h2d == 0 &&
        (r.decode_vram.requests > 0 || r.vram_all_resident))
      gpu_resident.push_back(r.decode_seconds_per_token);
  std::optional<double> gpu_floor;
  if (!gpu_resident.empty()) {
    gpu_floor = spread(gpu_resident).median;
    j["gpu_compute_floor"] = {{"seconds_per_token", *gpu_floor}, {"runs", gpu_resident.size()}};
  }
  j["summary"] = nlohmann::json::array();
  for (const auto& [k, rs] : groups) {
    std::vector<double> dec, pre, hit, miss_bytes, read_bytes, disk_floor, recall, vs_max, vs_sum, achieved, steal, sys,
        vs_vm, busy_share, busy_gbps, busy_depth, vram_hit, h2d_bytes, pcie_floor;
    std::vector<double> guess_precision[2], guess_recall[2];
    const int tokens = rs.front()->ids.size() > 1 ? static_cast<int>(rs.front()->ids.size()) - 1 : 1;
    for (auto* r : rs) {
      dec.push_back(r->decode_seconds_per_token);
      pre.push_back(r->prefill_seconds);
      const auto& c = r->decode;
      hit.push_back(c.requests ? double(c.ram_hits) / c.requests : 0);
      // The floor counts the bytes the workload needed from the disk (misses, used prefetches);
      // prefetch reads never used are the run's own cost, not the floor's.
      const double mb = double(c.bytes_needed) / tokens;
      miss_bytes.push_back(mb);
      read_bytes.push_back(double(c.bytes_read) / tokens);
      for (int d = 0; d < 2; ++d)
        if (c.guessed[d]) {
          guess_precision[d].push_back(double(c.guessed_right[d]) / c.guessed[d]);
          guess_recall[d].push_back(double(c.guessed_right[d]) / c.guessed_demand[d]);
        }
      // The disk floor uses the faster of the probes' rate around this run (the mean of the probes
      // either side of it) and what the run's own reads achieved (bytes over the wall time
      // with a read in flight): a host-side cache can make the run's reads faster than a fresh
      // probe, and the floor must not flatter the run.
      const double in_run = in_run_gbps(*r);
      if (in_run > 0) achieved.push_back(in_run);
      FloorInputs in;
      in.disk_bytes_per_token = mb;
      in.disk_gbps = std::max(bracketing_probe_gbps(*r, direct_read_gbps), in_run);
      if (r->gpu) {
        // The PCIe floor: what the VRAM tier copied host -> device per token over the pinned rate
        // probed before the arm's runs. The compute floor is the GPU's.
        const BenchVram& v = r->decode_vram;
        in.h2d_bytes_per_token = double(v.bytes_h2d) / tokens;
        in.h2d_gbps = r->h2d_probe_gbps > 0 ? r->h2d_probe_gbps : h2d_gbps;
        in.has_compute = gpu_floor.has_value();
        in.compute_seconds = gpu_floor.value_or(0);
        vram_hit.push_back(r->vram_all_resident ? 1.0 : v.requests ? double(v.hits) / v.requests : 0);
        h2d_bytes.push_back(in.h2d_bytes_per_token);
      } else if (auto cf = compute_floor.find(r->threads); cf != compute_floor.end()) {
        in.has_compute = true;
        in.compute_seconds = cf->second;
      }
      const DecodeFloors f = decode_floors(in);
      disk_floor.push_back(f.disk);
      if (r->gpu) pcie_floor.push_back(f.pcie);
      if (f.has_compute) {
        vs_max.push_back(floor_ratio(r->decode_seconds_per_token, f.max()));
        vs_sum.push_back(floor_ratio(r->decode_seconds_per_token, f.sum()));
        // What this machine allows: the CPU's compute slowed by the CPU time taken from it.
        if (!r->gpu) {
          const double cpu_floor = f.compute + r->decode_steal_seconds_per_token / std::max(1, r->compute_threads);
          vs_vm.push_back(floor_ratio(r->decode_seconds_per_token, std::max(f.disk, cpu_floor)));
        }
      }
      // How the disk spent the decode: the share of its wall time with a read in flight, and the
      // rate while one was (below the probe's when the reads in flight are fewer than its depth).
      if (c.read_seconds > 0 && r->decode_seconds_per_token > 0) {
        busy_share.push_back(c.read_seconds / (r->decode_seconds_per_token * tokens));
        busy_gbps.push_back(double(c.bytes_read) / c.read_seconds / 1e9);
        busy_depth.push_back(c.read_depth_seconds / c.read_seconds);
      }
      steal.push_back(r->decode_steal_seconds_per_token);
      sys.push_back(r->decode_sys_seconds_per_token);
      recall.push_back(c.prefetch_issued ? double(c.prefetch_used) / c.prefetch_issued : 0);
    }
    auto js = [](const Spread& s) { return nlohmann::json{{"median", s.median}, {"min", s.min}, {"max", s.max}}; };
    nlohmann::json g = {{"arm", k.first},
                        {"threads", rs.front()->threads},
                        {"mode", k.second},
                        {"device", rs.front()->gpu ? "cuda" : "cpu"},
                        {"decode_seconds_per_token", js(spread(dec))},
                        {"prefill_seconds", js(spread(pre))},
                        {"decode_ram_hit_rate", js(spread(hit))},
                        {"decode_disk_bytes_per_token", js(spread(miss_bytes))},
                        {"decode_read_bytes_per_token", js(spread(read_bytes))},
                        {"decode_disk_floor_seconds", js(spread(disk_floor))},
                        {"prefetch_precision", js(spread(recall))}};
    if (!achieved.empty()) g["in_run_read_gbps"] = js(spread(achieved));
    if (!busy_share.empty()) {
      g["decode_disk_busy_share"] = js(spread(busy_share));
      g["decode_read_gbps_while_busy"] = js(spread(busy_gbps));
      g["decode_reads_in_flight_while_busy"] = js(spread(busy_depth));
    }
    // The next-layer prediction: of the experts guessed d layers ahead, the share the layer asked
    // for (precision), and of what it asked for, the share guessed (recall).
    for (int d = 0; d < 2; ++d)
      if (!guess_precision[d].empty()) {
        g[d ? "prediction_precision_2_ahead" : "prediction_precision_1_ahead"] = js(spread(guess_precision[d]));
        g[d ? "prediction_recall_2_ahead" : "prediction_recall_1_ahead"] = js(spread(guess_recall[d]));
      }
    g["decode_steal_cpu_seconds_per_token"] = js(spread(steal));
    g["decode_sys_cpu_seconds_per_token"] = js(spread(sys));
    if (!vs_vm.empty()) g["decode_vs_steal_adjusted_floor"] = js(spread(vs_vm));
    if (!vs_max.empty()) {
      // GPU arms: against max(disk, PCIe, GPU compute floor) and their sum.
      g["decode_vs_max_floor"] = js(spread(vs_max));
      g["decode_vs_sum_of_floors"] = js(spread(vs_sum));
    }
    if (rs.front()->gpu) {
      g["vram_slots"] = rs.front()->vram_slots;
      g["vram_all_resident"] = rs.front()->vram_all_resident;
      g["decode_vram_hit_rate"] = js(spread(vram_hit));
      g["decode_h2d_bytes_per_token"] = js(spread(h2d_bytes));
      g["decode_pcie_floor_seconds"] = js(spread(pcie_floor));
      if (gpu_floor) g["gpu_compute_floor_seconds"] = *gpu_floor;
    }
    j["summary"].push_back(g);
  }
  return j.dump(2);
}

}  // namespace deltafin
