// The benchmark's bookkeeping on a small synthesized model: every arm and mode
// is run and summarised, the oracle compares ids, the compute floor comes from
// warm runs that read nothing or from a --compute-floor arm's resident replay,
// and each run's disk floor uses its own probe.
// Timings are recorded, never asserted.
#include <nlohmann/json.hpp>

#include "bench/bench_runner.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"

using namespace deltafin;

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
    // One probe per arm and repetition, each run carrying the probe taken next to it.
    int probes = 0;
    for (const auto& s : said) probes += s.rfind("O_DIRECT expert reads:", 0) == 0;
    QCOMPARE(probes, 6);
    QVERIFY(rep.direct_read_gbps > 0);
    for (const auto& r : rep.runs) QVERIFY(r.probe_gbps > 0);

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

  void probeReadsWhatItIsAskedFor() {
    std::string engine;
    const double a = measure_direct_read_gbps(dir_, 4, 4, &engine, 1);
    QVERIFY(a > 0);
    QVERIFY2(engine == "io_uring" || engine == "pread pool", engine.c_str());
  }
};

QTEST_GUILESS_MAIN(TestBenchRunner)
#include "test_bench_runner.moc"
