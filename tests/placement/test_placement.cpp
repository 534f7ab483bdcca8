// The placement planner: its byte map against the real K3 index (every text tensor accounted for
// once), its byte accounting for many budgets, and its errors for budgets that cannot work.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "base/error.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "placement/bandwidths.h"
#include "placement/machine_budget.h"
#include "placement/model_byte_map.h"
#include "placement/plan_report.h"
#include "placement/planner.h"
#include "placement/split_layout.h"
#include "runtime/k3_model.h"
#include "runtime/k3_weights.h"
#include "support/test_support.h"

using namespace deltafin;
using namespace deltafin::placement;

namespace {

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return {};
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

Bandwidths some_rates() {
  Bandwidths b;
  b.disk_gbps = 7;
  b.ram_gbps = 80;
  b.cpu_bf16_gbps = 50;
  b.cpu_mxfp4_gbps = 30;
  b.cpu_gflops = 1000;
  b.h2d_gbps = 25;
  b.hbm_gbps = 900;
  b.gpu_tflops = 60;
  return b;
}

// The real K3's byte map, from its config (the fixture k3-real-meta).
ModelByteMap real_k3_bytes() {
  return ModelByteMap::from_config(K3Config::load(test::fixtures_dir() + "/k3-real-meta/config.json"));
}

MachineBudget machine(double ram_gb, std::vector<double> gpus_gb) {
  MachineBudget m;
  m.ram_budget = uint64_t(ram_gb * 1e9);
  for (size_t i = 0; i < gpus_gb.size(); ++i)
    m.gpus.push_back(GpuBudget{"GPU " + std::to_string(i), uint64_t(gpus_gb[i] * 1e9), 0});
  return m;
}

// Every byte of a plan is in exactly one place and no budget is exceeded.
void check_accounting(const Plan& p) {
  uint64_t units = 0;
  for (const auto& u : p.units) units += u.bytes;
  uint64_t want = p.bytes.tied_embeddings ? p.bytes.embed_bytes : p.bytes.lm_head_bytes;
  for (const auto& L : p.bytes.layers) want += L.matrix_bytes;
  QCOMPARE(units, want);
  QCOMPARE(p.spine_in(Home::Vram) + p.spine_in(Home::Ram) + p.spine_in(Home::Disk), want);
  QVERIFY(p.ram_reserved + p.spine_in(Home::Ram) + p.experts.ram_bytes <= p.budget.ram_budget);
  for (size_t g = 0; g < p.budget.gpus.size(); ++g)
    QVERIFY(p.vram_reserved[g] + p.spine_in_gpu(int(g)) + p.experts.vram_bytes[g] <= p.budget.gpus[g].budget);
  // Streamed units need the two stream buffers, and only then.
  QCOMPARE(p.streamed_units() > 0, p.ram_stream_buffers > 0);
  uint64_t biggest_streamed = 0;
  for (const auto& u : p.units)
    if (u.home == Home::Disk) biggest_streamed = std::max(biggest_streamed, u.bytes);
  QCOMPARE(p.ram_stream_buffers, 2 * biggest_streamed);
  // Compute devices: VRAM units on their GPU, nothing on a GPU that does not exist.
  for (const auto& u : p.units) {
    if (u.home == Home::Vram) QCOMPARE(u.decode_device, u.gpu);
    QVERIFY(u.decode_device < int(p.budget.gpus.size()));
    QVERIFY(u.prefill_device < int(p.budget.gpus.size()));
  }
  QVERIFY(p.decode.seconds_per_token > 0);
  QVERIFY(p.prefill.seconds_per_token > 0);
  QVERIFY(!p.decode.bound.empty());
}

}  // namespace

class TestPlacement : public QObject {
  Q_OBJECT
 private slots:
  void real_index_every_text_tensor_once() {
    const std::string dir = test::fixtures_dir() + "/k3-real-meta";
    const K3Config cfg = K3Config::load(dir + "/config.json");
    const std::string text = gunzip(dir + "/model.safetensors.index.json.gz");
    QVERIFY2(!text.empty(), "the gzipped real index is readable");
    const CheckpointIndex idx = CheckpointIndex::parse(text, "real index");
    const auto tensors = k3_text_tensors(cfg, "language_model.");
    std::set<std::string> mine;
    for (const auto& t : tensors) QVERIFY2(mine.insert(t.name).second, t.name.c_str());
    size_t text_in_index = 0;
    for (const auto& [name, shard] : idx.tensor_shard) {
      if (name.rfind("language_model.", 0) != 0) {
        // Only the vision tower and the projector are not text.
        QVERIFY2(name.rfind("vision_tower.", 0) == 0 || name.rfind("mm_projector.", 0) == 0, name.c_str());
        continue;
      }
      ++text_in_index;
      QVERIFY2(mine.count(name), ("not in the byte map: " + name).c_str());
    }
    QCOMPARE(mine.size(), text_in_index);

    const ModelByteMap m = ModelByteMap::from_tensors(cfg, tensors);
    // K3-SPEC.md section 1: 82,432 experts of 17,547,264 bytes.
    QCOMPARE(uint64_t(m.experts) * m.moe_layers, uint64_t(82432));
    QCOMPARE(m.expert_bytes, uint64_t(17547264));
    // The index's total less the text model is the vision tower and projector, which the engine
    // never reads: more than nothing, under 1 GB.
    const uint64_t text_total = m.spine_bytes() + m.all_expert_bytes();
    QVERIFY(idx.total_size > text_total);
    QVERIFY(idx.total_size - text_total < 1000000000ull);
    // The spec's independent sum of the spine: 113.5 GB.
    QVERIFY(std::abs(double(m.spine_bytes()) / 1e9 - 113.5) < 0.1);
    // Its per-layer figures: a KDA block 0.887 GB, an MLA block 0.464 GB (attention matrices and
    // small tensors), the dense layer 0 MLP 1.453 GB.
    QCOMPARE(m.embed_bytes, uint64_t(163840) * 7168 * 2);
    QCOMPARE(m.lm_head_bytes, uint64_t(163840) * 7168 * 2);
    QVERIFY(m.layers[0].moe == false && m.layers[1].moe);
    uint64_t spine_layers = 0;
    for (const auto& L : m.layers) spine_layers += L.matrix_bytes + L.router_bytes + L.small_bytes;
    QCOMPARE(spine_layers + m.embed_bytes + m.lm_head_bytes + m.head_small_bytes, m.spine_bytes());
  }

  void header_sizes_match_config_sizes() {
    // k3-tiny ships the K3 dtypes: the map from its headers equals the map from its config.
    const std::string dir = test::fixtures_dir() + "/k3-tiny";
    const K3Config cfg = K3Config::load(dir + "/config.json");
    auto ck = Checkpoint::open(dir);
    const ModelByteMap a = ModelByteMap::from_checkpoint(*ck, cfg), b = ModelByteMap::from_config(cfg);
    QCOMPARE(a.spine_bytes(), b.spine_bytes());
    QCOMPARE(a.expert_bytes, b.expert_bytes);
    QCOMPARE(a.expert_bytes, cfg.expert_bytes());
    for (size_t l = 0; l < a.layers.size(); ++l) {
      QCOMPARE(a.layers[l].matrix_bytes, b.layers[l].matrix_bytes);
      QCOMPARE(a.layers[l].small_bytes, b.layers[l].small_bytes);
    }
    // The weight binder counts every non-expert tensor it binds: the same total.
    QCOMPARE(K3Weights::bind(*ck, cfg).spine_bytes, a.spine_bytes());
  }

  void state_is_the_sessions() {
    // The plan reserves RAM (and VRAM) for one session's state: what a K3Session holds (fp64, as
    // the GPU session's), after 0 and after 5 tokens.
    const std::string dir = test::fixtures_dir() + "/k3-tiny";
    auto model = K3Model::load(dir);
    const ModelByteMap m = ModelByteMap::from_config(model->config());
    K3Session s(*model);
    QCOMPARE(s.state_bytes(), m.state_bytes(0));
    s.prefill(std::vector<int32_t>{1, 2, 3, 4, 5});
    QCOMPARE(s.state_bytes(), m.state_bytes(5));
    QCOMPARE(model->kv_bytes_per_token(), m.kv_bytes_per_token);
    QCOMPARE(model->fixed_state_bytes(), m.fixed_state_bytes);
  }

  void accounting_for_many_machines() {
    const ModelByteMap m = real_k3_bytes();
    const Bandwidths r = some_rates();
    struct M {
      double ram;
      std::vector<double> gpus;
    };
    const M machines[] = {{24, {}},      {64, {24}}, {128, {32}},    {192, {48}},
                          {256, {96}},   {512, {}},  {64, {32, 32}}, {256, {48, 48, 48, 48}},
                          {1000, {141}}, {16, {}}};
    for (const auto& x : machines) {
      const Plan p = make_plan(m, machine(x.ram, x.gpus), r);
      check_accounting(p);
    }
    // More RAM never leaves more spine on disk, and never predicts a slower decode.
    double last = 1e30;
    uint64_t last_disk = UINT64_MAX;
    for (double ram = 16; ram <= 1024; ram *= 1.5) {
      const Plan p = make_plan(m, machine(ram, {}), r);
      QVERIFY(p.spine_in(Home::Disk) <= last_disk);
      QVERIFY(p.decode.seconds_per_token <= last * (1 + 1e-9));
      last = p.decode.seconds_per_token;
      last_disk = p.spine_in(Home::Disk);
    }
    // 512 GB holds the whole spine; 64 GB does not.
    QCOMPARE(make_plan(m, machine(512, {}), r).spine_in(Home::Disk), uint64_t(0));
    QVERIFY(make_plan(m, machine(64, {}), r).spine_in(Home::Disk) > 0);
    // Two GPUs: layers fill GPU 0 from layer 0, then GPU 1; one hand-over.
    const Plan two = make_plan(m, machine(256, {32, 32}), r);
    int last_gpu = 0;
    for (const auto& u : two.units)
      if (u.home == Home::Vram && u.unit >= 0) {
        QVERIFY(u.gpu >= last_gpu);
        last_gpu = u.gpu;
      }
    QCOMPARE(last_gpu, 1);
  }

  void whole_spine_on_the_gpu_only_where_it_fits() {
    // Real K3's spine is ~114 GB: a run without budgets keeps the whole-spine CUDA path on a GPU
    // with room for it and the session, and is planned on the 24-96 GB GPUs people own.
    const ModelByteMap m = real_k3_bytes();
    const PlanOptions po;
    const uint64_t need = m.spine_bytes() + m.fixed_state_bytes + m.kv_bytes_per_token * 32768 + po.gpu_scratch_bytes;
    QVERIFY2(m.spine_bytes() > 100000000000ull, format_gb(m.spine_bytes()).c_str());
    for (double gb : {24.0, 32.0, 48.0, 96.0}) QVERIFY(!whole_spine_fits_gpu(m, uint64_t(gb * 1e9), 32768, po));
    QVERIFY(whole_spine_fits_gpu(m, 141000000000ull, 32768, po));  // an H200's free memory
    QVERIFY(whole_spine_fits_gpu(m, need, 32768, po));
    QVERIFY(!whole_spine_fits_gpu(m, need - 1, 32768, po));
    QVERIFY(!whole_spine_fits_gpu(m, need, 32769, po));  // the session's cache counts
  }

  void budgets_too_small_say_the_minimum() {
    const ModelByteMap m = real_k3_bytes();
    const Plan ok = make_plan(m, machine(512, {}), some_rates());
    try {
      make_plan(m, machine(4, {}), some_rates());
      QFAIL("a 4 GB RAM budget was accepted");
    } catch (const Error& e) {
      const std::string s = e.what();
      QVERIFY2(s.find("smallest working set") != std::string::npos, s.c_str());
      QVERIFY2(s.find(format_gb(ok.ram_minimum)) != std::string::npos, s.c_str());
    }
    // Exactly the minimum works.
    MachineBudget at_min = machine(0, {});
    at_min.ram_budget = ok.ram_minimum;
    check_accounting(make_plan(m, at_min, some_rates()));
    try {
      make_plan(m, machine(64, {2}), some_rates());
      QFAIL("a 2 GB VRAM budget was accepted");
    } catch (const Error& e) {
      const std::string s = e.what();
      QVERIFY2(s.find("VRAM budget") != std::string::npos && s.find(format_gb(ok.vram_minimum)) != std::string::npos,
               s.c_str());
    }
  }

  // Sizes of small models are not "0.0 GB": three digits below 1 GB, rounded up, so a minimum
  // printed in an error can be given back as a budget.
  void small_sizes_keep_their_digits() {
    QCOMPARE(format_gb(113'500'000'000ull), std::string("113.5 GB"));
    QCOMPARE(format_gb(0), std::string("0.0 GB"));
    QCOMPARE(format_gb(500'000'000ull), std::string("0.500 GB"));
    QCOMPARE(format_gb(3'415'700ull), std::string("0.00342 GB"));
    QCOMPARE(format_gb(999'999'999ull), std::string("1.000 GB"));
    QVERIFY(std::stod(format_gb(3'415'700ull)) * 1e9 >= 3'415'700.0);
    QCOMPARE(format_gb(1'116'000'000ull), std::string("1.1 GB"));
    QCOMPARE(format_gb_at_least(1'116'000'000ull), std::string("1.2 GB"));
    QCOMPARE(format_gb_at_least(1'100'000'000ull), std::string("1.1 GB"));
  }

  void budgets_larger_than_the_device() {
    MachineBudget m;
    m.ram_total = 64000000000ull;
    m.ram_budget = 1;
    QVERIFY_THROWS_EXCEPTION(Error, set_ram_budget(m, 65));
    set_ram_budget(m, 63);
    QCOMPARE(m.ram_budget, uint64_t(63e9));
    // No GPU here: a VRAM budget is refused unless planning another machine.
    QVERIFY_THROWS_EXCEPTION(Error, set_vram_budgets(m, {24000000000ull}, false));
    set_vram_budgets(m, {32000000000ull, 32000000000ull}, true);
    QCOMPARE(m.gpus.size(), size_t(2));
    // A known GPU: one figure per GPU, none above its memory.
    MachineBudget g;
    g.gpus.push_back(GpuBudget{"GPU 0", 20000000000ull, 24000000000ull});
    QVERIFY_THROWS_EXCEPTION(Error, set_vram_budgets(g, {25000000000ull}, false));
    QVERIFY_THROWS_EXCEPTION(Error, set_vram_budgets(g, {10000000000ull, 10000000000ull}, false));
    set_vram_budgets(g, {23000000000ull}, false);
    QCOMPARE(g.gpus[0].budget, uint64_t(23000000000ull));
    QVERIFY_THROWS_EXCEPTION(Error, parse_gb_list("32,x", "--vram-budget"));
    QVERIFY_THROWS_EXCEPTION(Error, parse_gb_list("-1", "--vram-budget"));
    QCOMPARE(parse_gb_list("32,48.5", "--vram-budget"), (std::vector<uint64_t>{32000000000ull, 48500000000ull}));
  }

  void advice_names_a_change_that_helps() {
    const ModelByteMap m = real_k3_bytes();
    const Plan p = make_plan(m, machine(64, {}), some_rates());
    const std::string h = what_would_help(p);
    QVERIFY2(!h.empty(), "a 64 GB machine streaming half its spine can be helped");
    QVERIFY2(h.find(" -> ") != std::string::npos, h.c_str());
  }

  void expert_copies_do_not_overlap_the_cpu_layers() {
    // A 24 GB GPU with 128 GB of RAM and a disk too fast to matter: the CPU computes the RAM layers
    // and the GPU its own, whose experts mostly miss its small tier. Those copies wait for each
    // layer's routing, so they overlap the GPU's kernels but not the CPU's layers.
    const ModelByteMap m = real_k3_bytes();
    Bandwidths r = some_rates();
    r.disk_gbps = 1000;
    const Plan p = make_plan(m, machine(128, {24}), r);
    const PhasePrediction& d = p.decode;
    QVERIFY2(d.cpu_s > 0 && d.gpu_s > 0, "a split decode");
    QVERIFY2(d.expert_h2d_s > d.gpu_s, "the GPU layers' expert copies outlast their kernels");
    QVERIFY(d.expert_h2d_s <= d.h2d_s);
    const double pass = std::max({d.disk_s, d.h2d_s, d.cpu_s + std::max(d.gpu_s, d.expert_h2d_s)});
    QVERIFY(std::abs(d.seconds_per_token - pass) <= 1e-12 * pass);
    QVERIFY(d.seconds_per_token > d.cpu_s + d.gpu_s);
  }

  void copies_ahead_hold_two_layers_of_the_vram_tier() {
    // A 96 GB GPU with 256 GB of RAM decodes the whole spine from VRAM, copying each MoE layer's
    // experts ahead under the layer before: two layers' misses hold slots at once, so the tier
    // hits (S - 2d) / (N - 2d) of N experts with S slots and d = top_k a decode step, and the
    // expert copies over PCIe are the rest (not the (S - d) / (N - d) of a tier without them).
    const ModelByteMap m = real_k3_bytes();
    const Bandwidths r = some_rates();
    const Plan p = make_plan(m, machine(256, {96}), r);
    int gpu_moe = 0;
    for (const auto& u : p.units)
      if (u.unit >= 0 && m.layers[u.unit].moe && u.decode_device == 0) {
        QCOMPARE(int(u.home), int(Home::Vram));
        ++gpu_moe;
      }
    QVERIFY2(gpu_moe >= 2, "the GPU decodes consecutive MoE layers");
    const double eb = double(m.expert_bytes), d = m.top_k;
    const double S = double(p.experts.vram_bytes[0]) / eb, N = double(gpu_moe) * m.experts;
    QVERIFY2(S > 2 * d && S < N, "a VRAM tier larger than two layers' misses and smaller than the experts");
    const double f = (S - 2 * d) / (N - 2 * d), f_without = (S - d) / (N - d);
    const double copies = gpu_moe * d * eb * (1 - f) / (r.h2d_gbps * 1e9);
    const double without = gpu_moe * d * eb * (1 - f_without) / (r.h2d_gbps * 1e9);
    QVERIFY2(
        std::abs(p.decode.expert_h2d_s - copies) <= 1e-9 * copies,
        qPrintable(
            QString("%1 against %2 (without copies ahead %3)").arg(p.decode.expert_h2d_s).arg(copies).arg(without)));
    QVERIFY(copies > without);
  }

  void short_verify_passes_stay_where_decode_runs() {
    // 32 GB GPU + 128 GB RAM and a CPU whose arithmetic (200 GFLOP/s, as the H100 hosts' fp64) bounds
    // a prompt pass: the CPU decodes the RAM layers and the GPU prefills them. A pass of a few rows
    // costs the CPU about what a decode does, less than copying those layers over PCIe, so it runs
    // as decode up to the rows where the GPU wins (about 2 flops a BF16 byte: 8 rows at 200 GFLOP/s
    // take what 25 GB/s takes to copy).
    const ModelByteMap m = real_k3_bytes();
    Bandwidths r = some_rates();
    r.cpu_gflops = 200;
    const Plan p = make_plan(m, machine(128, {32}), r);
    bool split = false;
    for (const auto& u : p.units) split = split || (u.decode_device == kCpu && u.prefill_device == 0);
    QVERIFY2(split, "some layer is decoded on the CPU and prefilled on the GPU");
    QVERIFY2(p.prefill_from_rows > 2 && p.prefill_from_rows <= p.options.gpu_prefill_rows,
             std::to_string(p.prefill_from_rows).c_str());
    const DeviceLayout d = device_layout(p);
    QCOMPARE(d.prefill_from_rows, p.prefill_from_rows);
    QCOMPARE(d.gpus[0].prefill_from_rows, p.prefill_from_rows);
    for (int u = 0; u <= d.layers(); ++u) {
      QCOMPARE(d.device(u, p.prefill_from_rows - 1), d.decode[size_t(u)]);
      QCOMPARE(d.device(u, p.prefill_from_rows), d.prefill[size_t(u)]);
    }
    QVERIFY(plan_table(p).find("passes of fewer than " + std::to_string(p.prefill_from_rows)) != std::string::npos);
    // Everything in VRAM or everything on the CPU: nothing to keep back.
    QCOMPARE(make_plan(m, machine(512, {}), some_rates()).prefill_from_rows, 2);
  }

  void repredict_keeps_the_placement_and_rescales_the_cpu() {
    const ModelByteMap m = real_k3_bytes();
    Bandwidths r = some_rates();
    r.disk_gbps = 1000;  // so that the CPU bounds decode
    const Plan p = make_plan(m, machine(512, {}), r);
    QCOMPARE(p.decode.bound, std::string("CPU"));
    Plan same = p;
    repredict(same, r);
    QCOMPARE(same.decode.seconds_per_token, p.decode.seconds_per_token);
    QCOMPARE(same.prefill.seconds_per_token, p.prefill.seconds_per_token);
    Bandwidths slow = r;
    slow.cpu_bf16_gbps /= 2;
    slow.cpu_mxfp4_gbps /= 2;
    slow.cpu_gflops /= 2;
    Plan q = p;
    repredict(q, slow);
    QCOMPARE(q.rates.cpu_bf16_gbps, slow.cpu_bf16_gbps);
    QVERIFY(std::abs(q.decode.cpu_s - 2 * p.decode.cpu_s) <= 1e-12 * p.decode.cpu_s);
    QCOMPARE(q.decode.rows, p.decode.rows);
    QCOMPARE(q.prefill.rows, p.prefill.rows);
    QCOMPARE(q.units.size(), p.units.size());
    for (size_t i = 0; i < q.units.size(); ++i) {
      QCOMPARE(q.units[i].home, p.units[i].home);
      QCOMPARE(q.units[i].decode_device, p.units[i].decode_device);
    }
  }

  void plan_command() {
    const std::string bin = test::bin_dir() + "/deltafin";
    if (!QFile::exists(QString::fromStdString(bin))) QSKIP("the deltafin executable is not built");
    const std::string meta = test::fixtures_dir() + "/k3-real-meta";
    auto ok = test::run_process({bin, "plan", "--model-root", meta, "--other-machine", "--ram-budget", "64",
                                 "--vram-budget", "24", "--disk-gbps", "7"});
    QCOMPARE(ok.code, 0);
    QVERIFY2(ok.out.find("what would help most: ") != std::string::npos, ok.out.c_str());
    QVERIFY2(ok.out.find("VRAM (GPU 0)") != std::string::npos, ok.out.c_str());
    QVERIFY2(ok.out.find("disk-bound") != std::string::npos, ok.out.c_str());
    // Too small: the error names the minimum (the planner's own figure for this model).
    const K3Config cfg = K3Config::load(meta + "/config.json");
    MachineBudget big;
    big.ram_budget = 512000000000ull;
    const Plan p = make_plan(ModelByteMap::from_config(cfg), big, assumed_desktop());
    auto small = test::run_process({bin, "plan", "--model-root", meta, "--other-machine", "--ram-budget", "5"});
    QCOMPARE(small.code, 1);
    QVERIFY2(small.err.find("give --ram-budget " + format_gb_at_least(p.ram_minimum) + " or more") != std::string::npos,
             small.err.c_str());
    // A VRAM budget on this machine, which the test takes to have no GPU this build can use.
    auto nogpu = test::run_process({bin, "plan", "--model-root", meta, "--vram-budget", "24", "--disk-gbps", "7"});
#ifndef DELTAFIN_HAVE_CUDA_K3
    QCOMPARE(nogpu.code, 1);
    QVERIFY2(nogpu.err.find("no CUDA GPU") != std::string::npos, nogpu.err.c_str());
#endif
    // Two GPUs of another machine: both named in the table.
    auto two = test::run_process({bin, "plan", "--model-root", meta, "--other-machine", "--ram-budget", "128",
                                  "--vram-budget", "32,32", "--disk-gbps", "14"});
    QCOMPARE(two.code, 0);
    QVERIFY2(two.out.find("VRAM (GPU 1)") != std::string::npos, two.out.c_str());
    // Each GPU named with its budget and the layer range in its VRAM, before the table.
    QVERIFY2(two.out.rfind("GPU 0: budget 32.0 GB, layers 0-", 0) == 0, two.out.c_str());
    QVERIFY2(two.out.find("\nGPU 1: budget 32.0 GB, layers ") != std::string::npos, two.out.c_str());
    // A budget list on this machine must give one figure per GPU (none here, or as many as it has).
    auto three =
        test::run_process({bin, "plan", "--model-root", meta, "--vram-budget", "32,32,32", "--disk-gbps", "7"});
    QCOMPARE(three.code, 1);
  }

  // Rates cached by an engine that measured another way are measured again, not planned with.
  void cached_rates_of_another_probe_method_are_dropped() {
    const std::string root = test::temp_dir("rates");
    Bandwidths b = some_rates();
    b.probe_method = kProbeMethod;
    save_cached_bandwidths(root, b);
    const auto same = load_cached_bandwidths(root);
    QVERIFY(same.has_value());
    QCOMPARE(same->probe_method, kProbeMethod);
    QCOMPARE(same->ram_gbps, b.ram_gbps);
    b.probe_method = kProbeMethod - 1;
    save_cached_bandwidths(root, b);
    QVERIFY(!load_cached_bandwidths(root).has_value());
    // A record from before the field existed counts as method 1.
    {
      std::ofstream f(bandwidth_cache_path(root));
      f << R"({"disk_gbps": 1, "ram_gbps": 2, "cpu_bf16_gbps": 3, "cpu_mxfp4_gbps": 4, "cpu_gflops": 5})";
    }
    QVERIFY(!load_cached_bandwidths(root).has_value());
    QCOMPARE(Bandwidths::from_json(R"({"disk_gbps": 1, "ram_gbps": 2, "cpu_bf16_gbps": 3, "cpu_mxfp4_gbps": 4,
                                      "cpu_gflops": 5})",
                                   "test")
                 .probe_method,
             1);
  }
};

QTEST_GUILESS_MAIN(TestPlacement)
#include "test_placement.moc"
