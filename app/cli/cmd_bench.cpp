// `deltafin bench`: named arms, alternating repetitions, cold and warm runs,
// medians with spread, an oracle on output ids, and a JSON result file.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "base/error.h"
#include "bench/bench_runner.h"
#include "cli_common.h"
#include "commands.h"
#include "model/k3_config.h"
#include <nlohmann/json.hpp>

#include "placement/cpu_spine.h"
#include "placement/plan_report.h"
#include "plan_flags.h"

namespace deltafin::cli {

namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

struct ParsedArm {
  BenchArm arm;
  double ram_budget_gb = 0;  // --ram-budget: the spine and the expert tier as the plan puts them
  bool ram_cache_given = false, mmap = false;
};

// "name:--ram-cache 12 --policy lru" -> a BenchArm.
ParsedArm parse_arm(const std::string& spec) {
  ParsedArm out;
  const auto colon = spec.find(':');
  BenchArm arm;
  arm.name = spec.substr(0, colon);
  arm.flags = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (arm.name.empty()) throw Error("--arm '" + spec + "' has no name", "write --arm NAME:FLAGS");
  CLI::App p{"arm"};
  bool mmap = false;
  std::string device = "cpu";
  StoreFlags f;
  p.add_flag("--mmap", mmap);
  p.add_option("--device", device)->check(CLI::IsMember({"cpu", "cuda"}));
  p.add_option("--vram-experts", arm.vram_experts)->check(CLI::Range(1, 1 << 30));
  p.add_flag("--host-guesses", arm.host_guesses);
  p.add_flag("--compute-floor", arm.compute_floor);
  auto* cache_opt = p.add_option("--ram-cache", f.ram_gb);
  p.add_option("--ram-budget", out.ram_budget_gb);
  p.add_option("--policy", f.policy);
  p.add_flag("--no-prefetch", f.no_prefetch);
  p.add_option("--guess-budget", f.guess_budget);
  p.add_flag("--page-cache", f.page_cache);
  p.add_flag("--no-lock", f.no_lock);
  p.add_option("--io", f.io)->check(CLI::IsMember({"uring", "pread"}));
  p.add_option("--qd", f.qd)->check(CLI::Range(0, 256));
  p.add_option("--threads", arm.threads);
  p.add_option("--heat", f.heat);
  auto words = split_words(arm.flags);
  std::vector<std::string> rev(words.rbegin(), words.rend());
  try {
    p.parse(rev);
  } catch (const CLI::ParseError& e) {
    throw Error("arm '" + arm.name + "': " + e.what(),
                "arm flags: --mmap --compute-floor --ram-cache GB --ram-budget GB --policy lru|lfu|heat --no-prefetch "
                "--guess-budget auto|all|MB "
                "--page-cache --io uring|pread --qd N --threads N --heat FILE --device cpu|cuda --vram-experts N "
                "--host-guesses");
  }
  if (mmap && arm.compute_floor)
    throw Error("arm '" + arm.name + "': --compute-floor needs the RAM tier", "drop --mmap");
  arm.cuda = device == "cuda";
  if (!mmap) arm.store = f.options();
  if (arm.cuda && out.ram_budget_gb > 0)
    throw Error(
        "arm '" + arm.name + "': --device cuda holds the whole spine in VRAM; --ram-budget plans a CPU arm's spine",
        "drop --ram-budget (--ram-cache GB sizes the RAM tier)");
  check_bench_arm(arm);  // before anything loads: a GPU arm in a CPU-only build, --vram-experts alone
  out.arm = arm;
  out.ram_cache_given = cache_opt->count() > 0;
  out.mmap = mmap;
  return out;
}

}  // namespace

void add_bench(CLI::App& app) {
  struct Opts {
    std::string root, ids, out = "bench.json";
    std::vector<std::string> arms;
    int prompt_len = 16, new_tokens = 8, reps = 3;
    bool cold_only = false, warm_only = false, no_bw = false;
  };
  auto o = std::make_shared<Opts>();
  auto* c =
      app.add_subcommand("bench", "Compare configurations (arms) on one workload; exits 3 if any arm's output differs");
  c->add_option("--model-root", o->root, "Model folder")->required();
  c->add_option("--arm", o->arms,
                "NAME:FLAGS, e.g. 'lru:--ram-cache 12 --policy lru' (repeatable; default: one mmap arm)");
  c->add_option("--prompt-ids", o->ids, "Prompt ids (default: --prompt-len seeded random ids after [BOS])");
  c->add_option("--prompt-len", o->prompt_len, "Random prompt length")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--new", o->new_tokens, "Tokens to decode per run")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--reps", o->reps, "Repetitions per arm (alternating order)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  c->add_flag("--cold-only", o->cold_only, "Only runs that start with empty expert caches");
  c->add_flag("--warm-only", o->warm_only, "Only runs that follow a run of the same workload");
  c->add_flag("--no-bandwidth", o->no_bw, "Skip the O_DIRECT bandwidth probe");
  c->add_option("--out", o->out, "JSON result file")->capture_default_str();
  c->callback([o] {
    BenchPlan plan;
    plan.model_root = o->root;
    plan.new_tokens = o->new_tokens;
    plan.reps = o->reps;
    plan.cold = !o->warm_only;
    plan.warm = !o->cold_only;
    plan.measure_bandwidth = !o->no_bw;
    const K3Config cfg = K3Config::load(o->root + "/config.json");
    if (!o->ids.empty()) {
      plan.prompt = parse_ids(o->ids);
    } else {
      std::mt19937 rng(7);
      if (cfg.bos_token_id >= 0) plan.prompt.push_back(static_cast<int32_t>(cfg.bos_token_id));
      while (static_cast<int>(plan.prompt.size()) < o->prompt_len)
        plan.prompt.push_back(static_cast<int32_t>(rng() % 256));
    }
    std::vector<ParsedArm> parsed;
    for (const auto& a : o->arms) parsed.push_back(parse_arm(a));
    if (parsed.empty()) parsed.push_back(parse_arm("mmap:--mmap"));
    // Each arm's placement plan: its prediction is printed beside the measurement.
    std::vector<std::optional<placement::Plan>> plans;
    std::vector<BenchArm> arms;
    for (auto& pa : parsed) {
      std::optional<placement::Plan> p;
      if (pa.ram_budget_gb > 0) {
        PlanFlags f;
        f.use_gpus = false;
        f.ram_budget_gb = pa.ram_budget_gb;
        p = f.make(o->root, [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); });
        pa.arm.spine = placement::cpu_spine_placement(*p);
        if (pa.arm.store && !pa.ram_cache_given) placement::size_ram_tier(*p, *pa.arm.store);
      }
      plans.push_back(p);
      arms.push_back(pa.arm);
    }
    auto report = run_bench(plan, arms, [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); });
    std::ofstream(o->out) << report.json() << "\n";
    std::printf("%-14s %-8s %12s %13s %8s %11s %10s %11s %8s %8s %9s %8s %7s %11s %6s %8s\n", "arm", "mode",
                "decode s/tok", "(min-max)", "RAM hit", "disk MB/tok", "read MB/t", "disk floor", "t/max", "t/sum",
                "steal s/t", "t/vm", "sys s/t", "pred 1/2", "busy", "GB/s b");
    std::printf(
        "(disk floor: needed bytes (misses and used prefetches) / the faster of the O_DIRECT probes' mean just before\n"
        " and after the run and the run's own read rate; read MB/t adds the prefetches never used; pred: precision of\n"
        " the next-layer prediction one and two layers ahead; busy: share of the decode with a read in flight,\n"
        " GB/s b: the read rate while one was)\n");
    auto j = nlohmann::json::parse(report.json());
    for (const auto& s : j["summary"]) {
      auto med = [&](const char* k) { return s.contains(k) ? s[k]["median"].get<double>() : 0.0; };
      std::printf("%-14s %-8s %12.4f %6.3f-%-6.3f %7.1f%% %11.1f %10.1f %11.4f", s["arm"].get<std::string>().c_str(),
                  s["mode"].get<std::string>().c_str(), med("decode_seconds_per_token"),
                  s["decode_seconds_per_token"]["min"].get<double>(),
                  s["decode_seconds_per_token"]["max"].get<double>(), 100 * med("decode_ram_hit_rate"),
                  med("decode_disk_bytes_per_token") / 1e6, med("decode_read_bytes_per_token") / 1e6,
                  med("decode_disk_floor_seconds"));
      if (s.contains("decode_vs_max_floor"))
        std::printf(" %8.3f %8.3f", med("decode_vs_max_floor"), med("decode_vs_sum_of_floors"));
      else std::printf(" %8s %8s", "-", "-");
      std::printf(" %9.3f", med("decode_steal_cpu_seconds_per_token"));
      if (s.contains("decode_vs_steal_adjusted_floor")) std::printf(" %8.3f", med("decode_vs_steal_adjusted_floor"));
      else std::printf(" %8s", "-");
      std::printf(" %7.3f", med("decode_sys_cpu_seconds_per_token"));
      if (s.contains("prediction_precision_1_ahead"))
        std::printf(" %5.1f/%-5.1f", 100 * med("prediction_precision_1_ahead"),
                    100 * med("prediction_precision_2_ahead"));
      else std::printf(" %11s", "-");
      if (s.contains("decode_disk_busy_share"))
        std::printf(" %5.0f%% %8.2f", 100 * med("decode_disk_busy_share"), med("decode_read_gbps_while_busy"));
      std::printf("\n");
    }
    // GPU arms: the VRAM tier and the three floors (their t/max and t/sum above are against these).
    bool gpu_header = false;
    for (const auto& s : j["summary"]) {
      if (s["device"] != "cuda") continue;
      if (!gpu_header) {
        gpu_header = true;
        std::printf("\n%-14s %-8s %12s %6s %8s %11s %11s %11s %11s %8s %8s\n", "GPU arm", "mode", "decode s/tok",
                    "slots", "VRAM hit", "H2D MB/tok", "disk floor", "PCIe floor", "GPU floor", "t/max", "t/sum");
        std::printf(
            "(PCIe floor: bytes the VRAM tier copied host -> device per token / the pinned host -> device rate probed\n"
            " before the arm; GPU floor: decode with every expert already in VRAM; t/max and t/sum: against\n"
            " max(disk, PCIe, GPU floor) and their sum)\n");
      }
      auto med = [&](const char* k) { return s.contains(k) ? s[k]["median"].get<double>() : 0.0; };
      std::printf("%-14s %-8s %12.4f %6d %7.1f%% %11.1f %11.4f %11.4f", s["arm"].get<std::string>().c_str(),
                  s["mode"].get<std::string>().c_str(), med("decode_seconds_per_token"), s["vram_slots"].get<int>(),
                  100 * med("decode_vram_hit_rate"), med("decode_h2d_bytes_per_token") / 1e6,
                  med("decode_disk_floor_seconds"), med("decode_pcie_floor_seconds"));
      if (s.contains("gpu_compute_floor_seconds"))
        std::printf(" %11.4f %8.3f %8.3f", s["gpu_compute_floor_seconds"].get<double>(), med("decode_vs_max_floor"),
                    med("decode_vs_sum_of_floors"));
      else std::printf(" %11s %8s %8s", "-", "-", "-");
      std::printf("%s\n", s["vram_all_resident"].get<bool>() ? " (every expert resident)" : "");
    }
    if (j.contains("gpu_compute_floor"))
      std::printf("GPU compute floor (resident GPU runs, or warm GPU runs that copied nothing): %.4f s/token\n",
                  j["gpu_compute_floor"]["seconds_per_token"].get<double>());
    if (gpu_header)
      std::printf("pinned host -> device rate (median of the probes) %.2f GB/s\n", j["h2d_gbps"].get<double>());
    for (const auto& f : j["compute_floors"])
      std::printf(
          "CPU compute floor (resident runs, or warm runs that read nothing; %s compute threads): %.4f s/token\n",
          f["threads"].get<int>() ? std::to_string(f["threads"].get<int>()).c_str() : "all",
          f["seconds_per_token"].get<double>());
    if (!j["compute_floors"].empty())
      std::printf(
          "t/max and t/sum: each CPU run against max(disk floor, compute floor) and their sum, same thread count;\n"
          "steal s/t: CPU seconds per token the hypervisor took (/proc/stat); t/vm: against max(disk floor,\n"
          "compute floor + steal / compute threads), what a VM that charges disk emulation to its CPUs allows;\n"
          "sys s/t: this process's kernel CPU seconds per token (system calls, page faults, O_DIRECT page pinning)\n");
    for (size_t i = 0; i < arms.size(); ++i) {
      if (!plans[i]) continue;
      const auto& p = *plans[i];
      std::printf("plan %-9s %s\n", arms[i].name.c_str(), placement::plan_summary(p).c_str());
      for (const auto& s : j["summary"])
        if (s["arm"].get<std::string>() == arms[i].name)
          std::printf("  %-5s predicted %.4f s/token (%s-bound), measured median %.4f: %.2fx the prediction\n",
                      s["mode"].get<std::string>().c_str(), p.decode.seconds_per_token, p.decode.bound.c_str(),
                      s["decode_seconds_per_token"]["median"].get<double>(),
                      s["decode_seconds_per_token"]["median"].get<double>() / p.decode.seconds_per_token);
    }
    if (std::none_of(plans.begin(), plans.end(), [](const auto& p) { return p.has_value(); })) {
      // No arm follows a budget: the plan for this machine's free memory, for reference.
      try {
        PlanFlags f;
        f.use_gpus = false;
        std::printf("%s\n", placement::plan_summary(f.make(o->root)).c_str());
      } catch (const Error& e) {
        std::printf("plan: unavailable (%s)\n", e.what());
      }
    }
    std::printf("O_DIRECT read bandwidth (median of the probes) %.2f GB/s (%s); results in %s\n",
                report.direct_read_gbps, report.io_engine.c_str(), o->out.c_str());
    if (!report.ids_identical) {
      std::fprintf(stderr, "ORACLE FAILED: %s\n", report.first_difference.c_str());
      exit_code = 3;
    } else {
      std::printf("oracle: every run produced the same %zu ids\n",
                  report.runs.empty() ? size_t(0) : report.runs[0].ids.size());
    }
  });
}

}  // namespace deltafin::cli
