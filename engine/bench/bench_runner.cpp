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

#include "base/error.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "runtime/generate.h"
#include "runtime/k3_model.h"
#include "runtime/k3_weights.h"
#include "store/read_engine.h"

namespace deltafin {

namespace {
using Clock = std::chrono::steady_clock;

nlohmann::json counters_json(const ExpertCounters& c) {
  return {{"requests", c.requests},           {"ram_hits", c.ram_hits},
          {"disk_reads", c.disk_reads},       {"bytes_read", c.bytes_read},
          {"prefetch_issued", c.prefetch_issued}, {"prefetch_used", c.prefetch_used},
          {"prefetch_wasted", c.prefetch_wasted}, {"prefetch_cancelled", c.prefetch_cancelled},
          {"evictions", c.evictions},         {"read_seconds", c.read_seconds},
          {"wait_seconds", c.wait_seconds}};
}

// Bytes over the wall time with at least one read in flight, both phases.
double in_run_gbps(const BenchRun& r) {
  const double sec = r.prefill.read_seconds + r.decode.read_seconds;
  return sec > 0 ? double(r.prefill.bytes_read + r.decode.bytes_read) / sec / 1e9 : 0;
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

BenchRun one_run(K3Model& m, const BenchPlan& plan, const std::string& arm, const std::string& mode, int rep) {
  BenchRun r;
  r.arm = arm;
  r.mode = mode;
  r.rep = rep;
  K3Session s(m);
  const auto c0 = m.experts().counters();
  ExpertCounters c1;
  GenerateOptions g;
  g.max_new = plan.new_tokens;
  int produced = 0;
  Clock::time_point t_first;
  double steal_first = 0;
  auto res = generate(s, plan.prompt, g, [&](int32_t) {
    if (produced++ == 0) {
      c1 = m.experts().counters();
      t_first = Clock::now();
      steal_first = steal_seconds();
    }
    return true;
  });
  const auto c2 = m.experts().counters();
  r.ids = res.ids;
  r.prefill_seconds = res.stats.prefill_seconds;
  r.first_token_seconds = res.stats.first_token_seconds;
  // Decode: every token after the first, each one forward pass.
  const double decode = std::chrono::duration<double>(Clock::now() - t_first).count();
  r.decode_seconds_per_token = plan.new_tokens > 1 ? decode / (plan.new_tokens - 1) : 0;
  r.decode_steal_seconds_per_token = plan.new_tokens > 1 ? (steal_seconds() - steal_first) / (plan.new_tokens - 1) : 0;
  r.compute_threads = ThreadPool::global().size();
  r.prefill = c1 - c0;
  r.decode = c2 - c1;
  return r;
}

}  // namespace

void make_experts_cold(const std::string& root) {
  auto ck = Checkpoint::open(root);
  for (uint32_t s = 0; s < ck->shard_names().size(); ++s) {
    int fd = ::open(ck->shard_path(s).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
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

double measure_direct_read_gbps(const std::string& root, int n, int qd, std::string* engine_name, uint32_t seed) {
  auto cfg = K3Config::load(root + "/config.json");
  auto ck = Checkpoint::open(root);
  auto w = K3Weights::bind(*ck, cfg);
  std::vector<const ExpertLocation*> all;
  for (const auto& row : w.experts)
    for (const auto& L : row) all.push_back(&L);
  if (all.empty()) throw Error("no routed experts to read in " + root);
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  n = std::min<int>(n, static_cast<int>(all.size()));
  std::vector<int> fds;
  for (uint32_t s = 0; s < ck->shard_names().size(); ++s) {
    int fd = ::open(ck->shard_path(s).c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0) fd = ::open(ck->shard_path(s).c_str(), O_RDONLY | O_CLOEXEC);
    fds.push_back(fd);
  }
  std::string why;
  auto eng = make_io_uring_engine(qd, &why);
  if (!eng) eng = make_pread_engine(qd);
  if (engine_name) *engine_name = eng->name();
  const uint64_t chunk = 2ull << 20;
  std::vector<ReadJob> jobs;
  for (int i = 0; i < n; ++i) {
    const uint64_t a0 = all[i]->offset & ~4095ull, a1 = (all[i]->offset + all[i]->bytes + 4095) & ~4095ull;
    for (uint64_t o = a0; o < a1; o += chunk) jobs.push_back({fds[all[i]->shard], o, std::min(chunk, a1 - o), nullptr, 0});
  }
  const size_t bufbytes = size_t(qd) * chunk;
  void* buf = ::mmap(nullptr, bufbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uint64_t bytes = 0;
  for (int i = 0; i < n; ++i) bytes += all[i]->bytes;
  const auto t0 = Clock::now();
  size_t next = 0;
  int flying = 0;
  std::vector<int> free_slots;
  for (int i = qd - 1; i >= 0; --i) free_slots.push_back(i);
  while (next < jobs.size() || flying > 0) {
    while (next < jobs.size() && !free_slots.empty()) {
      ReadJob j = jobs[next++];
      const int slot = free_slots.back();
      free_slots.pop_back();
      j.dst = static_cast<uint8_t*>(buf) + size_t(slot) * chunk;
      j.tag = uint64_t(slot);
      eng->submit(j);
      ++flying;
    }
    ReadDone d = eng->wait();
    if (d.result < 0) throw Error("bandwidth probe read failed");
    free_slots.push_back(static_cast<int>(d.tag));
    --flying;
  }
  const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  ::munmap(buf, bufbytes);
  for (int fd : fds) ::close(fd);
  return bytes / sec / 1e9;
}

BenchReport run_bench(const BenchPlan& plan, const std::vector<BenchArm>& arms,
                      const std::function<void(const std::string&)>& progress) {
  BenchReport rep;
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  std::vector<double> probes;
  uint32_t probe_seed = 12345;
  auto probe = [&] {
    make_experts_cold(plan.model_root);
    const double g = measure_direct_read_gbps(plan.model_root, plan.bandwidth_experts, 16, &rep.io_engine, probe_seed++);
    probes.push_back(g);
    say("O_DIRECT expert reads: " + std::to_string(g) + " GB/s (" + rep.io_engine + ", QD 16)");
    return g;
  };
  for (int r = 0; r < plan.reps; ++r) {
    std::vector<const BenchArm*> order;
    for (const auto& a : arms) order.push_back(&a);
    if (r % 2) std::reverse(order.begin(), order.end());  // alternate so drift hits every arm alike
    for (const BenchArm* a : order) {
      ThreadPool::set_global_threads(a->threads);
      const double g = plan.measure_bandwidth ? probe() : 0;
      make_experts_cold(plan.model_root);
      K3Model::Options o;
      o.store = a->store;
      o.spine = a->spine;
      auto m = K3Model::load(plan.model_root, std::move(o));
      if (plan.cold) {
        rep.runs.push_back(one_run(*m, plan, a->name, "cold", r));
        rep.runs.back().probe_gbps = g;
        rep.runs.back().threads = a->threads;
        rep.runs.back().ram_tier = a->store.has_value();
        say(a->name + " cold #" + std::to_string(r) + ": decode " + std::to_string(rep.runs.back().decode_seconds_per_token) + " s/token");
      }
      if (plan.warm) {
        if (!plan.cold) one_run(*m, plan, a->name, "fill", r);
        rep.runs.push_back(one_run(*m, plan, a->name, "warm", r));
        rep.runs.back().probe_gbps = g;
        rep.runs.back().threads = a->threads;
        rep.runs.back().ram_tier = a->store.has_value();
        say(a->name + " warm #" + std::to_string(r) + ": decode " + std::to_string(rep.runs.back().decode_seconds_per_token) + " s/token");
      }
    }
  }
  ThreadPool::set_global_threads(0);
  if (!probes.empty()) {
    std::sort(probes.begin(), probes.end());
    rep.direct_read_gbps = probes[probes.size() / 2];
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
                         {"compute_threads", r.compute_threads},
                         {"probe_gbps", r.probe_gbps},
                         {"ids", r.ids},
                         {"prefill_counters", counters_json(r.prefill)},
                         {"decode_counters", counters_json(r.decode)}});
    groups[{r.arm, r.mode}].push_back(&r);
  }
  // The compute floor of this workload: decode with every expert already in RAM,
  // i.e. the warm runs that read nothing from disk (e.g. an arm whose budget
  // holds every expert the workload touches), per compute thread count.
  std::map<int, std::vector<double>> resident;
  for (const auto& r : runs)
    if (r.ram_tier && r.mode == "warm" && r.decode.disk_reads == 0 && r.decode.requests > 0)
      resident[r.threads].push_back(r.decode_seconds_per_token);
  std::map<int, double> compute_floor;
  j["compute_floors"] = nlohmann::json::array();
  for (const auto& [threads, v] : resident) {
    compute_floor[threads] = spread(v).median;
    j["compute_floors"].push_back({{"threads", threads}, {"seconds_per_token", compute_floor[threads]}, {"runs", v.size()}});
  }
  j["summary"] = nlohmann::json::array();
  for (const auto& [k, rs] : groups) {
    std::vector<double> dec, pre, hit, miss_bytes, disk_floor, recall, vs_max, vs_sum, achieved, steal, vs_vm;
    const int tokens = rs.front()->ids.size() > 1 ? static_cast<int>(rs.front()->ids.size()) - 1 : 1;
    for (auto* r : rs) {
      dec.push_back(r->decode_seconds_per_token);
      pre.push_back(r->prefill_seconds);
      const auto& c = r->decode;
      hit.push_back(c.requests ? double(c.ram_hits) / c.requests : 0);
      const double mb = double(c.bytes_read) / tokens;
      miss_bytes.push_back(mb);
      // The disk floor uses the faster of the probe next to this run and what the
      // run's own reads achieved (bytes over the wall time with a read in flight):
      // a host-side cache can make the run's reads faster than a fresh probe, and
      // the floor must not flatter the run.
      const double in_run = in_run_gbps(*r);
      if (in_run > 0) achieved.push_back(in_run);
      const double gbps = std::max(r->probe_gbps > 0 ? r->probe_gbps : direct_read_gbps, in_run);
      const double floor = gbps > 0 ? mb / (gbps * 1e9) : 0;
      disk_floor.push_back(floor);
      if (auto cf = compute_floor.find(r->threads); cf != compute_floor.end()) {
        vs_max.push_back(r->decode_seconds_per_token / std::max(floor, cf->second));
        vs_sum.push_back(r->decode_seconds_per_token / (floor + cf->second));
        // What this machine allows: the compute slowed by the CPU time taken from it.
        const double cpu_floor = cf->second + r->decode_steal_seconds_per_token / std::max(1, r->compute_threads);
        vs_vm.push_back(r->decode_seconds_per_token / std::max(floor, cpu_floor));
      }
      steal.push_back(r->decode_steal_seconds_per_token);
      recall.push_back(c.prefetch_issued ? double(c.prefetch_used) / c.prefetch_issued : 0);
    }
    auto js = [](const Spread& s) { return nlohmann::json{{"median", s.median}, {"min", s.min}, {"max", s.max}}; };
    nlohmann::json g = {{"arm", k.first},
                        {"threads", rs.front()->threads},
                        {"mode", k.second},
                        {"decode_seconds_per_token", js(spread(dec))},
                        {"prefill_seconds", js(spread(pre))},
                        {"decode_ram_hit_rate", js(spread(hit))},
                        {"decode_disk_bytes_per_token", js(spread(miss_bytes))},
                        {"decode_disk_floor_seconds", js(spread(disk_floor))},
                        {"prefetch_precision", js(spread(recall))}};
    if (!achieved.empty()) g["in_run_read_gbps"] = js(spread(achieved));
    g["decode_steal_cpu_seconds_per_token"] = js(spread(steal));
    if (!vs_vm.empty()) g["decode_vs_steal_adjusted_floor"] = js(spread(vs_vm));
    if (!vs_max.empty()) {
      g["decode_vs_max_floor"] = js(spread(vs_max));
      g["decode_vs_sum_of_floors"] = js(spread(vs_sum));
    }
    j["summary"].push_back(g);
  }
  return j.dump(2);
}

}  // namespace deltafin
