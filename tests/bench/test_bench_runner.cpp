// The benchmark's bookkeeping on a small synthesized model: every arm and mode
// is run and summarised, the oracle compares ids, the compute floor comes from
// warm runs that read nothing or from a --compute-floor arm's resident replay,
// and each run's disk floor uses its own probe. GPU arms (--device cuda): their flags and checks,
// the CPU-only build's error, and their floors' arithmetic from made-up counters (CI has no GPU).
// Timings are recorded, never asserted.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/bench_runner.h"
#include "bench/gpu_bench_session.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"

using namespace deltafin;

namespace {

// check_bench_arm's error for `arm`, or "" when it accepts the arm.
std::string refusal(const BenchArm& arm) {
  try {
    check_bench_arm(arm);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestBenchRunner : public QObject {
  Q_OBJECT
  std::string dir_;

 private slots:
  void initTestCase() {
    dir_ = test::temp_dir("bench-runner");
    write_k3_synth(synth_preset("demo"), dir_);
  }

  void armsModesFloorsAndOracle() {
    BenchPlan plan;
    plan.model_root = dir_;
    plan.prompt = {1, 17, 42, 99, 7, 3};
    plan.new_tokens = 5;
    plan.reps = 2;
    plan.bandwidth_experts = 8;

    BenchArm mmap_arm{"mmap", "--mmap", std::nullopt, 0};
    StoreOptions roomy;  // holds every expert of the demo model: warm runs read nothing
    roomy.ram_budget = 1ull << 30;
    roomy.lock_memory = false;
    StoreOptions tight = roomy;
    tight.max_slots = 3;  // smaller than one token's experts: waves and evictions
    tight.policy = EvictionPolicy::Lru;
    BenchArm roomy_arm{"roomy", "--ram-cache 1", roomy, 0};
    BenchArm tight_arm{"tight", "--ram-cache 1 (3 slots)", tight, 1};

    std::vector<std::string> said;
    const BenchReport rep =
        run_bench(plan, {mmap_arm, roomy_arm, tight_arm}, [&](const std::string& s) { said.push_back(s); });

    // Every arm ran cold then warm in every repetition, with the same ids.
    QCOMPARE(rep.runs.size(), size_t(3 * 2 * 2));
    QVERIFY2(rep.ids_identical, rep.first_difference.c_str());
    for (const auto& r : rep.runs) {
      QCOMPARE(r.ids.size(), size_t(plan.new_tokens));
      QCOMPARE(r.ids, rep.runs.front().ids);
    }
    // Alternating order: the second repetition starts with the last arm.
    QCOMPARE(rep.runs[0].arm, std::string("mmap"));
    QCOMPARE(rep.runs[6].arm, std::string("tight"));
    // One probe before each arm and repetition, one between a RAM-tier arm's cold and warm runs (not
    // the mmap arm's, whose warm run is its page cache) and one after the last: 2 x (3 + 2) + 1. Each
    // run carries the probes either side of it, so each probe ends one run's bracket and starts the
    // next's: the next run's before, or for the mmap arm's cold run the one after its warm run.
    int probes = 0;
    for (const auto& s : said) probes += s.rfind("O_DIRECT expert reads:", 0) == 0;
    QCOMPARE(probes, 11);
    QVERIFY(rep.direct_read_gbps > 0);
    for (const auto& r : rep.runs) QVERIFY(r.probe_gbps > 0 && r.probe_after_gbps > 0);
    for (size_t i = 0; i + 2 < rep.runs.size(); i += 2) {
      const BenchRun &cold = rep.runs[i], &warm = rep.runs[i + 1];
      QCOMPARE(cold.mode, std::string("cold"));
      QCOMPARE(warm.mode, std::string("warm"));
      if (cold.arm == "mmap") {
        QCOMPARE(cold.probe_after_gbps, warm.probe_after_gbps);
        QCOMPARE(cold.probe_gbps, warm.probe_gbps);
      } else {
        QCOMPARE(cold.probe_after_gbps, warm.probe_gbps);
      }
      QCOMPARE(warm.probe_after_gbps, rep.runs[i + 2].probe_gbps);
    }

    // The tight cache reads from disk even when warm; the roomy one does not.
    for (const auto& r : rep.runs) {
      if (r.arm == "tight") QVERIFY(r.decode.disk_reads > 0);
      if (r.arm == "roomy" && r.mode == "warm") {
        QCOMPARE(r.decode.disk_reads, uint64_t(0));
        QCOMPARE(r.decode.ram_hits, r.decode.requests);
      }
    }

    const auto j = nlohmann::json::parse(rep.json());
    QVERIFY(j["ids_identical"].get<bool>());
    // Floors per compute thread count, from RAM-tier arms only (mmap's counters cannot see page faults): the roomy arm.
    QCOMPARE(j["compute_floors"].size(), size_t(1));
    QCOMPARE(j["compute_floors"][0]["threads"].get<int>(), 0);
    QVERIFY(j["compute_floors"][0]["seconds_per_token"].get<double>() > 0);
    QCOMPARE(j["summary"].size(), size_t(6));
    for (const auto& s : j["summary"]) {
      const auto arm = s["arm"].get<std::string>();
      const auto& d = s["decode_seconds_per_token"];
      QVERIFY(d["min"].get<double>() <= d["median"].get<double>());
      QVERIFY(d["median"].get<double>() <= d["max"].get<double>());
      // Kernel CPU time per decode token is reported for every arm (tick-accounted: it may be 0).
      QVERIFY(s.contains("decode_sys_cpu_seconds_per_token"));
      QVERIFY(s["decode_sys_cpu_seconds_per_token"]["median"].get<double>() >= 0);
      // The tight arm runs on one thread, for which no run read nothing: no floor to compare with.
      QCOMPARE(s.contains("decode_vs_max_floor"), arm != "tight");
      QCOMPARE(s["threads"].get<int>(), arm == "tight" ? 1 : 0);
      if (arm != "tight")
        QVERIFY(s["decode_vs_max_floor"]["median"].get<double>() >=
                s["decode_vs_sum_of_floors"]["median"].get<double>());
      if (arm == "tight") {
        QVERIFY(s["decode_disk_bytes_per_token"]["median"].get<double>() > 0);
        QVERIFY(s["decode_disk_floor_seconds"]["median"].get<double>() > 0);
        QVERIFY(s.contains("in_run_read_gbps"));
        QVERIFY(s["decode_ram_hit_rate"]["median"].get<double>() < 1.0);
        // A run that reads during decode says how busy the disk was and how fast while busy
        // (recorded, not bounded: they are timings).
        QVERIFY(s["decode_disk_busy_share"]["median"].get<double>() > 0);
        QVERIFY(s["decode_read_gbps_while_busy"]["median"].get<double>() > 0);
      }
      if (arm == "roomy" && s["mode"] == "warm") {
        QCOMPARE(s["decode_ram_hit_rate"]["median"].get<double>(), 1.0);
        QCOMPARE(s["decode_disk_floor_seconds"]["median"].get<double>(), 0.0);
      }
    }
  }

  void residentRunsGiveTheComputeFloor() {
    BenchPlan plan;
    plan.model_root = dir_;
    plan.prompt = {1, 17, 42, 99, 7, 3};
    plan.new_tokens = 5;
    plan.reps = 1;
    plan.measure_bandwidth = false;
    StoreOptions tight;
    tight.ram_budget = 1ull << 30;
    tight.lock_memory = false;
    tight.max_slots = 3;  // far less than a step's experts: every decode step reads
    BenchArm floor_arm{"floor", "--ram-cache 1 --compute-floor", tight, 1};
    floor_arm.compute_floor = true;
    BenchArm tight_arm{"tight", "--ram-cache 1 (3 slots)", tight, 1};
    for (bool alone : {true, false}) {
      // Alone, the floor arm first records the workload with a cold run of its own.
      std::vector<BenchArm> arms = {floor_arm};
      if (!alone) arms.insert(arms.begin(), tight_arm);
      const BenchReport rep = run_bench(plan, arms);
      QVERIFY2(rep.ids_identical, rep.first_difference.c_str());
      QCOMPARE(rep.runs.size(), size_t(alone ? 2 : 3));  // (its cold run or tight's cold and warm) and the resident run
      const BenchRun& resident = rep.runs.back();
      QCOMPARE(resident.arm, std::string("floor"));
      QCOMPARE(resident.mode, std::string("resident"));
      QVERIFY(resident.decode.requests > 0);
      QCOMPARE(resident.decode.disk_reads, uint64_t(0));  // the step's experts were all in RAM
      QCOMPARE(resident.decode.ram_hits, resident.decode.requests);
      QVERIFY(resident.preload_seconds > 0);
      const auto j = nlohmann::json::parse(rep.json());
      QCOMPARE(j["compute_floors"].size(), size_t(1));
      QCOMPARE(j["compute_floors"][0]["threads"].get<int>(), 1);
      for (const auto& s : j["summary"])
        if (s["mode"] != "resident") QVERIFY(s.contains("decode_vs_max_floor"));
    }
  }

  // The floors of one run: bytes over rates, the largest and the sum, the run's time against them.
  void floorArithmetic() {
    FloorInputs in;
    in.disk_bytes_per_token = 2e9;  // 2 GB per token from a 4 GB/s disk: 0.5 s
    in.disk_gbps = 4;
    in.h2d_bytes_per_token = 3e9;  // 3 GB per token over 25 GB/s: 0.12 s
    in.h2d_gbps = 25;
    in.has_compute = true;
    in.compute_seconds = 0.3;
    DecodeFloors f = decode_floors(in);
    QCOMPARE(f.disk, 0.5);
    QCOMPARE(f.pcie, 0.12);
    QCOMPARE(f.compute, 0.3);
    QCOMPARE(f.max(), 0.5);
    QCOMPARE(f.sum(), 0.92);
    QCOMPARE(floor_ratio(0.55, f.max()), 1.1);
    // PCIe-bound: the copies dominate.
    in.h2d_bytes_per_token = 25e9;
    f = decode_floors(in);
    QCOMPARE(f.pcie, 1.0);
    QCOMPARE(f.max(), 1.0);
    // Compute-bound: nothing read or copied.
    in.disk_bytes_per_token = in.h2d_bytes_per_token = 0;
    f = decode_floors(in);
    QCOMPARE(f.disk, 0.0);
    QCOMPARE(f.pcie, 0.0);
    QCOMPARE(f.max(), 0.3);
    QCOMPARE(floor_ratio(0.3, f.max()), 1.0);
    // Rates not measured: no floor from them, and no ratio against a zero floor.
    FloorInputs none;
    none.disk_bytes_per_token = 1e9;
    none.h2d_bytes_per_token = 1e9;
    f = decode_floors(none);
    QCOMPARE(f.disk, 0.0);
    QCOMPARE(f.pcie, 0.0);
    QVERIFY(!f.has_compute);
    QCOMPARE(f.compute, 0.0);
    QCOMPARE(floor_ratio(1.0, f.max()), 0.0);
  }

  // A report of made-up CPU and GPU runs: the GPU compute floor comes from the GPU runs that copied
  // nothing, the CPU floor from CPU runs only, and each GPU group is compared with max(disk, PCIe,
  // GPU compute floor).
  void gpuRunsSummarisedFromTheirCounters() {
    BenchReport rep;
    rep.direct_read_gbps = 4;
    rep.h2d_gbps = 25;
    const std::vector<int32_t> ids = {1, 2, 3, 4, 5};  // 4 decode tokens
    auto make = [&](const std::string& arm, const std::string& mode, bool gpu, double seconds) {
      BenchRun r;
      r.arm = arm;
      r.mode = mode;
      r.ids = ids;
      r.ram_tier = true;
      r.gpu = gpu;
      r.decode_seconds_per_token = seconds;
      r.probe_gbps = 4;
      r.h2d_probe_gbps = gpu ? 20 : 0;
      r.vram_slots = gpu ? 256 : 0;
      return r;
    };
    // CPU: a resident run (the CPU floor, 2 s/token) and a cold one reading 8 GB (0.5 s/token floor).
    BenchRun cpu_floor = make("floor", "resident", false, 2.0);
    cpu_floor.decode.requests = 64;
    cpu_floor.decode.ram_hits = 64;
    BenchRun cpu_cold = make("ws2", "cold", false, 2.5);
    cpu_cold.decode.requests = 64;
    cpu_cold.decode.disk_reads = 64;
    cpu_cold.decode.bytes_needed = 8'000'000'000ull;
    // GPU: the floor arm's resident run (every step's experts in VRAM: no copies; 0.1 s/token), a
    // warm run whose RAM tier held every VRAM miss (no disk reads, yet no CPU floor), and a cold run.
    BenchRun gpu_floor = make("gfloor", "resident", true, 0.1);
    gpu_floor.decode_vram.requests = 512;
    gpu_floor.decode_vram.hits = 512;
    gpu_floor.decode.requests = 0;
    BenchRun gpu_warm = make("g1g", "warm", true, 0.45);
    gpu_warm.decode_vram = {512, 128, 384, 8'000'000'000ull, 384, 1.0};  // 2 GB per token over PCIe
    gpu_warm.decode.requests = 384;
    gpu_warm.decode.ram_hits = 384;
    BenchRun gpu_cold = make("g1g", "cold", true, 1.1);
    gpu_cold.decode_vram = {512, 0, 512, 12'000'000'000ull, 512, 4.0};  // 3 GB per token over PCIe
    gpu_cold.decode.requests = 512;
    gpu_cold.decode.disk_reads = 512;
    gpu_cold.decode.bytes_needed = 16'000'000'000ull;  // 4 GB per token from the disk: 1 s at 4 GB/s
    // A run whose arm's probes read 4 GB/s before it and 2 after: its floor takes the mean, 3.
    BenchRun bracketed = make("drift", "cold", false, 1.5);
    bracketed.probe_after_gbps = 2;
    bracketed.decode.requests = 64;
    bracketed.decode.disk_reads = 64;
    bracketed.decode.bytes_needed = 12'000'000'000ull;  // 3 GB per token
    rep.runs = {cpu_floor, cpu_cold, gpu_floor, gpu_warm, gpu_cold, bracketed};
    const auto j = nlohmann::json::parse(rep.json());

    QCOMPARE(j["h2d_gbps"].get<double>(), 25.0);
    // The CPU floor from the CPU resident run alone (the warm GPU run read nothing from disk too).
    QCOMPARE(j["compute_floors"].size(), size_t(1));
    QCOMPARE(j["compute_floors"][0]["seconds_per_token"].get<double>(), 2.0);
    QCOMPARE(j["gpu_compute_floor"]["seconds_per_token"].get<double>(), 0.1);
    QCOMPARE(j["gpu_compute_floor"]["runs"].get<int>(), 1);
    QCOMPARE(j["runs"][2]["device"].get<std::string>(), std::string("cuda"));
    QCOMPARE(j["runs"][0]["device"].get<std::string>(), std::string("cpu"));
    QCOMPARE(j["runs"][3]["decode_vram"]["bytes_h2d"].get<uint64_t>(), 8'000'000'000ull);
    auto group = [&](const std::string& arm, const std::string& mode) {
      for (const auto& s : j["summary"])
        if (s["arm"] == arm && s["mode"] == mode) return s;
      return nlohmann::json();
    };
    auto med = [](const nlohmann::json& s, const char* k) { return s[k]["median"].get<double>(); };
    const auto cold = group("g1g", "cold");
    QCOMPARE(cold["device"].get<std::string>(), std::string("cuda"));
    QCOMPARE(cold["vram_slots"].get<int>(), 256);
    QCOMPARE(med(cold, "decode_vram_hit_rate"), 0.0);
    QCOMPARE(med(cold, "decode_h2d_bytes_per_token"), 3e9);
    QCOMPARE(med(cold, "decode_disk_floor_seconds"), 1.0);   // 4 GB / 4 GB/s
    QCOMPARE(med(cold, "decode_pcie_floor_seconds"), 0.15);  // 3 GB / 20 GB/s, the arm's own probe
    QCOMPARE(cold["gpu_compute_floor_seconds"].get<double>(), 0.1);
    QCOMPARE(med(cold, "decode_vs_max_floor"), 1.1);             // 1.1 s against the disk's 1 s
    QCOMPARE(med(cold, "decode_vs_sum_of_floors"), 1.1 / 1.25);  // 1 + 0.15 + 0.1
    QVERIFY(!cold.contains("decode_vs_steal_adjusted_floor"));   // steal slows the CPU's compute, not the GPU's
    const auto warm = group("g1g", "warm");
    QCOMPARE(med(warm, "decode_vram_hit_rate"), 0.25);
    QCOMPARE(med(warm, "decode_disk_floor_seconds"), 0.0);
    QCOMPARE(med(warm, "decode_pcie_floor_seconds"), 0.1);  // 2 GB / 20 GB/s
    QCOMPARE(med(warm, "decode_vs_max_floor"), 4.5);        // PCIe-bound: 0.45 s against 0.1
    const auto floor = group("gfloor", "resident");
    QCOMPARE(med(floor, "decode_vram_hit_rate"), 1.0);
    QCOMPARE(med(floor, "decode_vs_max_floor"), 1.0);
    // CPU groups: no VRAM keys, their own floor and the steal-adjusted ratio.
    const auto ccold = group("ws2", "cold");
    QCOMPARE(ccold["device"].get<std::string>(), std::string("cpu"));
    QVERIFY(!ccold.contains("decode_pcie_floor_seconds"));
    QVERIFY(!ccold.contains("vram_slots"));
    QCOMPARE(med(ccold, "decode_disk_floor_seconds"), 0.5);
    QCOMPARE(med(ccold, "decode_vs_max_floor"), 1.25);  // 2.5 s against the CPU floor's 2
    QVERIFY(ccold.contains("decode_vs_steal_adjusted_floor"));
    QCOMPARE(med(group("drift", "cold"), "decode_disk_floor_seconds"), 1.0);  // 3 GB / 3 GB/s
  }

  // What a GPU arm needs, checked before anything runs; in a build without the CUDA backend the
  // error names the flag and the way to get the backend.
  void gpuArmsAreCheckedBeforeAnyRun() {
    StoreOptions store;
    store.ram_budget = 1ull << 30;
    store.lock_memory = false;
    BenchArm cpu_arm{"c", "--ram-cache 1 --vram-experts 8", store, 0};
    cpu_arm.vram_experts = 8;
    const std::string vram = refusal(cpu_arm);
    QVERIFY2(!vram.empty(), "--vram-experts without --device cuda was accepted");
    QVERIFY2(vram.find("--vram-experts") != std::string::npos, vram.c_str());
    QVERIFY2(vram.find("--device cuda") != std::string::npos, vram.c_str());
    BenchArm guessing{"c", "--ram-cache 1 --host-guesses", store, 0};
    guessing.host_guesses = true;
    const std::string guesses = refusal(guessing);
    QVERIFY2(!guesses.empty(), "--host-guesses without --device cuda was accepted");
    QVERIFY2(guesses.find("--host-guesses") != std::string::npos, guesses.c_str());
    QVERIFY2(guesses.find("--device cuda") != std::string::npos, guesses.c_str());
    BenchArm mapped{"m", "--mmap --device cuda", std::nullopt, 0};
    mapped.cuda = true;
    const std::string no_tier = refusal(mapped);
    QVERIFY2(!no_tier.empty(), "a GPU arm without the RAM tier was accepted");
    QVERIFY2(no_tier.find("--mmap") != std::string::npos, no_tier.c_str());
    BenchArm gpu{"g", "--ram-cache 1 --device cuda --vram-experts 8", store, 0};
    gpu.cuda = true;
    gpu.vram_experts = 8;
    if (bench_cuda_built()) {
      check_bench_arm(gpu);  // valid here; whether a GPU is usable shows when it runs
      return;
    }
    BenchPlan plan;
    plan.model_root = dir_;
    plan.prompt = {1, 17, 42};
    plan.new_tokens = 2;
    plan.reps = 1;
    std::vector<std::string> said;
    try {
      run_bench(plan, {BenchArm{"c", "--ram-cache 1", store, 0}, gpu},
                [&](const std::string& s) { said.push_back(s); });
      QFAIL("a GPU arm ran in a build without the CUDA backend");
    } catch (const Error& e) {
      const std::string w = e.what();
      QVERIFY2(w.find("arm 'g'") != std::string::npos, w.c_str());
      QVERIFY2(w.find("--device cuda") != std::string::npos, w.c_str());
      QVERIFY2(w.find("DELTAFIN_CUDA=ON") != std::string::npos, w.c_str());
    }
    QVERIFY(said.empty());  // nothing probed or run
  }

  // `deltafin bench`'s arm flags --device and --vram-experts: bad values and combinations fail with
  // exit status 1 before anything loads, and a GPU arm in a CPU-only build names the flag.
  void benchCommandParsesGpuFlags() {
    auto bench = [&](const std::string& arm) {
      return test::run_process({test::bin_dir() + "/deltafin", "bench", "--model-root", dir_, "--arm", arm,
                                "--no-bandwidth", "--reps", "1", "--new", "2", "--prompt-len", "3", "--out",
                                test::temp_dir("bench-cli") + "/b.json"});
    };
    struct Case {
      std::string arm, says;
    };
    for (const Case& c :
         {Case{"g:--ram-cache 1 --vram-experts 8", "--vram-experts"}, Case{"g:--ram-cache 1 --device tpu", "--device"},
          Case{"g:--ram-cache 1 --device cuda --vram-experts 0", "--vram-experts"},
          Case{"g:--mmap --device cuda", "--mmap"}, Case{"g:--ram-budget 8 --device cuda", "--ram-budget"},
          Case{"g:--ram-cache 1 --host-guesses", "--host-guesses"}}) {
      const auto r = bench(c.arm);
      QVERIFY2(r.code == 1, (c.arm + ": " + r.err).c_str());
      QVERIFY2(r.err.find(c.says) != std::string::npos, (c.arm + ": " + r.err).c_str());
      QVERIFY2(r.err.find("arm 'g'") != std::string::npos, (c.arm + ": " + r.err).c_str());
    }
    if (!bench_cuda_built()) {
      const auto r = bench("g:--ram-cache 1 --device cuda --vram-experts 8");
      QCOMPARE(r.code, 1);
      QVERIFY2(r.err.find("--device cuda needs the CUDA backend") != std::string::npos, r.err.c_str());
      QVERIFY2(r.err.find("DELTAFIN_CUDA=ON") != std::string::npos, r.err.c_str());
    }
    // The CPU arm's explicit --device cpu runs as before.
    const auto cpu = bench("c:--ram-cache 1 --device cpu");
    QVERIFY2(cpu.code == 0, cpu.err.c_str());
  }

  void probeReadsWhatItIsAskedFor() {
    std::string engine;
    const double a = measure_direct_read_gbps(dir_, 4, 4, &engine, 1);
    QVERIFY(a > 0);
    QVERIFY2(engine == "io_uring" || engine == "pread pool", engine.c_str());
  }
};

QTEST_GUILESS_MAIN(TestBenchRunner)
#include "test_bench_runner.moc"
