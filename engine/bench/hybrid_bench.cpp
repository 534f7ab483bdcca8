#include "bench/hybrid_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "base/thread_pool.h"
#include "cuda/gpu_rates.h"
#include "cuda/k3_cuda_model.h"
#include "cuda/vram_expert_cache.h"
#include "model/checkpoint.h"
#include "placement/bandwidths.h"
#include "placement/cpu_spine.h"
#include "placement/machine_budget.h"
#include "placement/model_byte_map.h"
#include "placement/plan_report.h"
#include "placement/planner.h"
#include "placement/split_layout.h"
#include "placement/split_session.h"
#include "runtime/ops.h"
#include "runtime/k3_model.h"

namespace deltafin::cuda {

using namespace deltafin::placement;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string f2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}
std::string f3(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

struct Measured {
  double prefill_s = 0, decode_s = 0;  // per token
  // The CPU's matrix ops during decode (runtime/ops.h op_totals), per token: seconds and rates.
  double cpu_matrix_s = 0, cpu_dense_gbs = 0, cpu_mxfp4_gbs = 0;
  // The CPU's worker pool during decode, per token: its calls and the caller's wait at their ends.
  double pool_calls = 0, pool_wait_s = 0;
  std::vector<int32_t> ids;
};

// Prefill of prompt_len ids in passes of the session's rows, then greedy decode of new_tokens.
Measured run_session(DecodeSession& s, int prompt_len, int new_tokens, int vocab) {
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  for (int i = 0; i < prompt_len; ++i) prompt[size_t(i)] = int32_t((7919ull * uint64_t(i + 1)) % uint64_t(vocab));
  Measured m;
  auto t = Clock::now();
  std::vector<float> logits = s.prefill(prompt, s.max_rows());
  m.prefill_s = since(t) / prompt_len;
  t = Clock::now();
  const OpTotals ops0 = op_totals();
  const ThreadPool::Stats pool0 = ThreadPool::global().stats();
  for (int i = 0; i < new_tokens; ++i) {
    const auto id = int32_t(std::max_element(logits.end() - vocab, logits.end()) - (logits.end() - vocab));
    m.ids.push_back(id);
    if (i + 1 == new_tokens) break;
    PassOptions o;
    o.all_logits = false;
    s.stage(std::span<const int32_t>(&m.ids.back(), 1), logits, o);
    s.commit(1);
  }
  m.decode_s = new_tokens > 1 ? since(t) / (new_tokens - 1) : 0;
  const OpTotals d = op_totals() - ops0;
  if (new_tokens > 1) {
    m.cpu_matrix_s = (d.dense_seconds + d.mxfp4_seconds) / (new_tokens - 1);
    const ThreadPool::Stats p = ThreadPool::global().stats() - pool0;
    m.pool_calls = double(p.calls) / (new_tokens - 1);
    m.pool_wait_s = p.wait_seconds / (new_tokens - 1);
  }
  m.cpu_dense_gbs = d.dense_seconds > 0 ? double(d.dense_bytes) / d.dense_seconds / 1e9 : 0;
  m.cpu_mxfp4_gbs = d.mxfp4_seconds > 0 ? double(d.mxfp4_bytes) / d.mxfp4_seconds / 1e9 : 0;
  return m;
}

// The CPU's matrices during decode: seconds per token in them, and their BF16 / MXFP4 rates, to set
// beside the probed CPU rates the prediction used.
std::string cpu_matrices_cell(const Measured& m) {
  char b[160];
  std::snprintf(b, sizeof b, "CPU matrices %.3f s (%.0f / %.0f GB/s), pool waits %.3f s (%.0f calls)", m.cpu_matrix_s,
                m.cpu_dense_gbs, m.cpu_mxfp4_gbs, m.pool_wait_s, m.pool_calls);
  return b;
}

// The median of the warm runs (all runs after the first), or the only run.
Measured summarize(std::vector<Measured> runs) {
  if (runs.size() > 1) runs.erase(runs.begin());
  auto med = [&](auto field) {
    std::vector<double> v;
    for (auto& r : runs) v.push_back(r.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Measured m;
  m.prefill_s = med(&Measured::prefill_s);
  m.decode_s = med(&Measured::decode_s);
  m.cpu_matrix_s = med(&Measured::cpu_matrix_s);
  m.cpu_dense_gbs = med(&Measured::cpu_dense_gbs);
  m.cpu_mxfp4_gbs = med(&Measured::cpu_mxfp4_gbs);
  m.pool_calls = med(&Measured::pool_calls);
  m.pool_wait_s = med(&Measured::pool_wait_s);
  m.ids = runs.front().ids;
  return m;
}

// The host model a plan's split runs on: the plan's spine placement and RAM expert tier.
std::unique_ptr<K3Model> load_host(const std::string& root, const Plan& p) {
  K3Model::Options ho;
  ho.spine = host_spine_placement(p);
  StoreOptions so;
  size_ram_tier(p, so);
  ho.store = so;
  return K3Model::load(root, std::move(ho));
}

// The CPU's and the disk's rates move on a shared host (the H100 machine's BF16 probe read 33-117
// GB/s minutes apart; its disk probe 1.5 GB/s on one slice and 2.3-2.5 on another within the hour),
// so a row's floor is measured beside it: the CPU and the slice's disk probed just before and just
// after run(), the mean of the two in `base`'s other figures.
template <class Run>
Bandwidths rates_around(const Bandwidths& base, const std::string& slice_root, Run run) {
  Bandwidths before = base, after = base;
  probe_cpu(before);
  probe_disk(before, slice_root);
  run();
  probe_cpu(after);
  probe_disk(after, slice_root);
  for (auto [f, g] :
       {std::pair{&before.cpu_bf16_gbps, after.cpu_bf16_gbps}, std::pair{&before.cpu_mxfp4_gbps, after.cpu_mxfp4_gbps},
        std::pair{&before.cpu_gflops, after.cpu_gflops}, std::pair{&before.ram_gbps, after.ram_gbps},
        std::pair{&before.disk_gbps, after.disk_gbps}})
    *f = (*f + g) / 2;
  return before;
}

// This machine's rates as deltafin plan probes them, on CUDA device `device`; the GPU's matmul rate
// is `given_tflops` instead of the measured one when positive.
Bandwidths probe_bench_rates(const std::string& slice_root, int device, double given_tflops) {
  Bandwidths rates;
  probe_cpu(rates);
  probe_disk(rates, slice_root);
  probe_gpu_rates(device, rates.h2d_gbps, rates.hbm_gbps, rates.gpu_tflops);
  if (given_tflops > 0) rates.gpu_tflops = given_tflops;
  return rates;
}

}  // namespace

bool bench_hybrid(const HybridBenchOptions& o, std::ostream& out) {
  const K3Config sc = K3Config::load(o.slice_root + "/config.json");
  const auto ck = Checkpoint::open(o.slice_root);
  const ModelByteMap slice = ModelByteMap::from_checkpoint(*ck, sc);
  const ModelByteMap real = ModelByteMap::for_model_root(o.real_meta_root);
  const auto gpus = gpu_memory();
  if (gpus.empty()) throw Error("bench_hybrid needs a CUDA GPU");

  const Bandwidths rates = probe_bench_rates(o.slice_root, 0, o.gpu_tflops);
  out << "Rates: disk " << f2(rates.disk_gbps) << " GB/s, RAM " << f2(rates.ram_gbps) << " GB/s, CPU BF16 "
      << f2(rates.cpu_bf16_gbps) << " GB/s, CPU MXFP4 " << f2(rates.cpu_mxfp4_gbps) << " GB/s, CPU "
      << f2(rates.cpu_gflops) << " GFLOP/s, PCIe " << f2(rates.h2d_gbps) << " GB/s, HBM " << f2(rates.hbm_gbps)
      << " GB/s, GPU " << f2(rates.gpu_tflops) << " TFLOP/s (" << (o.gpu_tflops > 0 ? "given" : "measured") << ")\n\n";

  PlanOptions po;
  po.context_tokens = o.prompt_len + o.new_tokens + 8;
  // The slice's own smallest working sets, and its sizes the real fractions apply to.
  MachineBudget huge;
  huge.ram_budget = 1ull << 50;
  huge.gpus.push_back(GpuBudget{"GPU 0", 1ull << 50, 0});
  const Plan roomy = make_plan(slice, huge, rates, po);
  uint64_t slice_units = 0, real_units = 0;
  for (const auto& u : roomy.units) slice_units += u.bytes;
  const Plan real_roomy = make_plan(real, huge, assumed_desktop(), po);
  for (const auto& u : real_roomy.units) real_units += u.bytes;
  const double slice_experts = double(slice.all_expert_bytes()), real_experts = double(real.all_expert_bytes());

  out << "| machine kept | slice budgets GB: VRAM / RAM | spine GB: VRAM / RAM / disk | expert tiers GB: VRAM / RAM | "
         "layout | predicted decode s/token (bound) | measured | measured / predicted | predicted prefill s/token "
         "(bound) | "
         "measured | measured / predicted | decode predicted at the row's CPU and disk rates (CPU BF16, disk GB/s) | "
         "measured / that | "
         "expert hit rate VRAM / RAM tier | decode s/token: CPU layers / GPU layers / rest; CPU matrices (BF16 / MXFP4 "
         "rate); prefill s/pass: CPU / GPU / rest (state moves) | ids |\n";
  out << "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |\n";
  out.flush();
  std::optional<std::vector<int32_t>> first_ids;
  bool all_same = true;
  auto ids_cell = [&](const std::vector<int32_t>& ids) {
    if (!first_ids) first_ids = ids;
    const bool same = ids == *first_ids;
    all_same = all_same && same;
    return std::string(same ? "same" : "DIFFER");
  };
  const int reps = std::max(1, o.reps);
  for (const HybridMachine& mc : o.machines) {
    // The real machine's plan: what share of the real spine and experts each tier holds.
    MachineBudget rb;
    rb.ram_budget = uint64_t(mc.ram_gb * 1e9);
    if (mc.gpu_gb > 0) rb.gpus.push_back(GpuBudget{"GPU 0", uint64_t(mc.gpu_gb * 1e9), 0});
    const Plan rp = make_plan(real, rb, assumed_desktop());
    const double fv = double(rp.spine_in(Home::Vram)) / double(real_units),
                 fr = double(rp.spine_in(Home::Ram)) / double(real_units);
    const double ev = rp.experts.vram_bytes.empty() ? 0 : double(rp.experts.vram_bytes[0]) / real_experts;
    const double er = double(rp.experts.ram_bytes) / real_experts;
    // The same shares of the slice, over the slice's own working sets.
    MachineBudget sb;
    sb.ram_budget = roomy.ram_minimum + uint64_t(fr * double(slice_units) + er * slice_experts);
    if (mc.gpu_gb > 0) {
      const uint64_t v =
          roomy.vram_minimum + 2 * slice.largest_unit_bytes() + uint64_t(fv * double(slice_units) + ev * slice_experts);
      sb.gpus.push_back(GpuBudget{"GPU 0", std::min<uint64_t>(v, gpus[0].free_bytes), gpus[0].total_bytes});
    }
    const Plan p = make_plan(slice, sb, rates, po);
    const std::string label =
        (mc.gpu_gb > 0 ? f2(mc.gpu_gb).substr(0, f2(mc.gpu_gb).size() - 3) + " GB GPU" : std::string("no GPU")) +
        " + " + f2(mc.ram_gb).substr(0, f2(mc.ram_gb).size() - 3) + " GB RAM";
    std::vector<Measured> runs;
    std::string layout_text;
    SplitStats split;  // the last run's
    // One model per machine, its expert tiers kept across the runs: the first run fills them from
    // the disk (cold), the later ones are the steady state the plan predicts (warm).
    auto host = load_host(o.slice_root, p);
    std::unique_ptr<CudaK3Model> gm;
    if (mc.gpu_gb > 0) {
      CudaK3Model::Options mo;
      mo.max_context = po.context_tokens;
      mo.layout = split_layout(p);
      gm = std::make_unique<CudaK3Model>(*host, mo);
      layout_text = gm->layout().describe();
    } else {
      layout_text = "CPU only";
    }
    // The tiers' hit rates over the runs summarize() reports (all but the first when there are several).
    ExpertCounters ram_before = host->experts().counters();
    const Bandwidths row_rates = rates_around(rates, o.slice_root, [&] {
      for (int r = 0; r < reps; ++r) {
        if (r == 1) {
          ram_before = host->experts().counters();
          if (gm) gm->experts().reset_counters();
        }
        K3Session cs(*host);
        if (gm) {
          CudaK3Session gs(*gm);
          SplitSession s(cs, gs, gm->layout());
          runs.push_back(run_session(s, o.prompt_len, o.new_tokens, sc.vocab));
          split = s.stats();
        } else {
          runs.push_back(run_session(cs, o.prompt_len, o.new_tokens, sc.vocab));
        }
      }
    });
    const Measured m = summarize(runs);
    Plan at_row = p;
    repredict(at_row, row_rates);
    const ExpertCounters ram_after = host->experts().counters();
    auto rate = [](uint64_t hits, uint64_t asked) {
      return asked ? f2(double(hits) / double(asked)) : std::string("-");
    };
    const VramTierCounters* vc = gm ? &gm->experts().counters() : nullptr;
    std::string hits = (vc ? rate(vc->hits, vc->requests) : std::string("-")) + " / " +
                       rate(ram_after.ram_hits - ram_before.ram_hits, ram_after.requests - ram_before.requests);
    if (vc && vc->ahead > 0)  // expert_prefetch: guesses copied ahead, and used
      hits += " (ahead " + std::to_string(vc->ahead_used) + " of " + std::to_string(vc->ahead) + " used)";
    // Copies straight from the pinned RAM tier against all copies: a staged copy is capped by the
    // host's memcpy, not PCIe.
    if (vc && vc->misses + vc->ahead > 0)
      hits += " (direct " + std::to_string(vc->direct) + " of " + std::to_string(vc->misses + vc->ahead) + ")";
    // Per pass of one kind: the CPU's layers, the GPU's, and the rest (hand-overs, set-up).
    auto by_side = [&](bool one_row) {
      const std::vector<double> t = split.per_pass(one_row);  // CPU, GPU, rest (one GPU)
      return f3(t[0]) + " / " + f3(t[1]) + " / " + f3(t[2]);
    };
    // Where the last run's decode went, then its prompt's passes (state moves included), in the
    // header's order.
    std::string where = "-";
    if (split.decode_passes > 0) where = by_side(true);
    if (m.cpu_matrix_s > 0) where += "; " + cpu_matrices_cell(m);
    if (split.multi_passes > 0)
      where += "; prefill pass " + by_side(false) + " (state moves " + f3(split.state_move_seconds) + ")";
    const std::string vram_tier = p.experts.vram_bytes.empty() ? "0.00" : f2(double(p.experts.vram_bytes[0]) / 1e9);
    out << "| " << label << " | " << (sb.gpus.empty() ? "-" : f2(double(sb.gpus[0].budget) / 1e9)) << " / "
        << f2(double(sb.ram_budget) / 1e9) << " | " << f2(double(p.spine_in(Home::Vram)) / 1e9) << " / "
        << f2(double(p.spine_in(Home::Ram)) / 1e9) << " / " << f2(double(p.spine_in(Home::Disk)) / 1e9) << " | "
        << vram_tier << " / " << f2(double(p.experts.ram_bytes) / 1e9) << " | " << layout_text << " | "
        << f3(p.decode.seconds_per_token) << " (" << p.decode.bound << ") | " << f3(m.decode_s) << " | "
        << f2(m.decode_s / p.decode.seconds_per_token) << " | " << f3(p.prefill.seconds_per_token) << " ("
        << p.prefill.bound << ") | " << f3(m.prefill_s) << " | " << f2(m.prefill_s / p.prefill.seconds_per_token)
        << " | " << f3(at_row.decode.seconds_per_token) << " (" << at_row.decode.bound << ", "
        << f2(row_rates.cpu_bf16_gbps) << ", " << f2(row_rates.disk_gbps) << ") | "
        << f2(m.decode_s / at_row.decode.seconds_per_token) << " | " << hits << " | " << where << " | "
        << ids_cell(m.ids) << " |\n";
    out.flush();
  }
  if (o.references) {
    // The whole slice on the GPU (spine in VRAM, every expert resident when they fit) and on the CPU.
    auto host = K3Model::load(o.slice_root);
    {
      CudaK3Model::Options mo;
      mo.max_context = po.context_tokens;
      mo.expert_slots = CudaK3Model::Options::kAutoSlots;
      CudaK3Model gm(*host, mo);
      std::vector<Measured> runs;
      for (int r = 0; r < reps; ++r) {
        CudaK3Session gs(gm);
        runs.push_back(run_session(gs, o.prompt_len, o.new_tokens, sc.vocab));
      }
      const Measured m = summarize(runs);
      out << "| reference: the whole slice on the GPU | - | " << f2(double(slice_units) / 1e9)
          << " / 0 / 0 | - | GPU only | - | " << f3(m.decode_s) << " | - | - | " << f3(m.prefill_s)
          << " | - | - | - | - | - | " << ids_cell(m.ids) << " |\n";
    }
    // The CPU forward against its own floor: the all-CPU plan of the slice (everything in RAM),
    // predicted with the CPU rates probed just before and after the run.
    MachineBudget cpu_only;
    cpu_only.ram_budget = 1ull << 50;
    Plan pc = make_plan(slice, cpu_only, rates, po);
    K3Session cs(*host);
    Measured m;
    const Bandwidths row_rates =
        rates_around(rates, o.slice_root, [&] { m = run_session(cs, o.prompt_len, o.new_tokens, sc.vocab); });
    repredict(pc, row_rates);
    out << "| reference: the whole slice on the CPU (mapped) | - | 0 / " << f2(double(slice_units) / 1e9)
        << " / 0 | - | CPU only | - | " << f3(m.decode_s) << " | - | - | " << f3(m.prefill_s) << " | - | - | "
        << f3(pc.decode.seconds_per_token) << " (" << pc.decode.bound << ", " << f2(row_rates.cpu_bf16_gbps) << ", "
        << f2(row_rates.disk_gbps) << ") | " << f2(m.decode_s / pc.decode.seconds_per_token) << " | - | "
        << cpu_matrices_cell(m) << " | " << ids_cell(m.ids) << " |\n";
  }
  out << "\n"
      << (all_same ? "Oracle: every arm produced the same ids." : "ORACLE FAILED: some arm's ids differ.") << "\n";
  return all_same;
}

bool bench_multigpu(const MultiGpuBenchOptions& o, std::ostream& out) {
  const K3Config sc = K3Config::load(o.slice_root + "/config.json");
  const auto ck = Checkpoint::open(o.slice_root);
  const ModelByteMap slice = ModelByteMap::from_checkpoint(*ck, sc);
  const std::vector<int> logical = logical_devices();
  if (logical.empty()) throw Error("bench_multigpu needs a CUDA GPU");
  // The GPUs: every logical GPU, or the first one as many times as asked (two by default).
  const int n = o.gpus > 0 ? o.gpus : std::max<int>(2, int(logical.size()));
  std::vector<int> devices;
  for (int g = 0; g < n; ++g) devices.push_back(int(logical.size()) >= n ? logical[size_t(g)] : logical[0]);
  bool imitated = false;
  for (int g = 1; g < n; ++g)
    imitated = imitated || std::count(devices.begin(), devices.begin() + g, devices[size_t(g)]) > 0;

  const Bandwidths rates = probe_bench_rates(o.slice_root, devices[0], o.gpu_tflops);
  out << "Rates: disk " << f2(rates.disk_gbps) << " GB/s, CPU BF16 " << f2(rates.cpu_bf16_gbps) << " GB/s, PCIe "
      << f2(rates.h2d_gbps) << " GB/s, HBM " << f2(rates.hbm_gbps) << " GB/s, GPU " << f2(rates.gpu_tflops)
      << " TFLOP/s (" << (o.gpu_tflops > 0 ? "given" : "measured") << ")\n";
  out << n << " GPUs on CUDA device(s)";
  for (int d : devices) out << " " << d;
  out << (imitated ? " (logical GPUs sharing a device: the hand-overs are copies within it)" : "") << "\n\n";

  PlanOptions po;
  po.context_tokens = o.prompt_len + o.new_tokens + 8;
  MachineBudget huge;
  huge.ram_budget = 1ull << 50;
  huge.gpus.push_back(GpuBudget{"GPU 0", 1ull << 50, 0});
  const Plan roomy = make_plan(slice, huge, rates, po);
  uint64_t spine = 0;
  for (const auto& u : roomy.units) spine += u.bytes;
  const double share = o.spine_share > 0 ? o.spine_share : 1.25 / n;
  const uint64_t each = roomy.vram_minimum + 2 * slice.largest_unit_bytes() + uint64_t(share * double(spine));
  MachineBudget b;
  b.ram_budget = 1ull << 50;
  for (int g = 0; g < n; ++g) {
    const int d = devices[size_t(g)];
    const auto sharing = uint64_t(std::count(devices.begin(), devices.end(), d));
    const uint64_t free_b = device_free_bytes(d);
    if (each * sharing > free_b)
      throw Error("CUDA device " + std::to_string(d) + " has " + format_gb(free_b) +
                  " free: " + std::to_string(sharing) + " budget(s) of " + format_gb(each) + " do not fit");
    b.gpus.push_back(GpuBudget{"GPU " + std::to_string(g), each, 0, g});
  }
  const Plan p = make_plan(slice, b, rates, po);
  MachineBudget one = b;
  one.gpus.resize(1);
  const Plan p1 = make_plan(slice, one, rates, po);
  out << "Slice spine " << f2(double(spine) / 1e9) << " GB; each GPU's budget " << format_gb(each) << " ("
      << f2(100 * share) << " % of the spine over the smallest working set). One GPU with that budget holds "
      << f2(double(p1.spine_in(Home::Vram)) / 1e9) << " GB of the spine in VRAM (decode predicted "
      << f3(p1.decode.seconds_per_token) << " s/token, " << p1.decode.bound << "-bound).\n\n```\n"
      << plan_gpus(p) << plan_summary(p) << "\n```\n\n";

  // The models (and their expert tiers) live across the runs, so the runs after the first are warm.
  auto host = load_host(o.slice_root, p);
  const DeviceLayout d = device_layout(p);
  std::vector<std::unique_ptr<CudaK3Model>> models;
  for (int g = 0; g < n; ++g) {
    CudaK3Model::Options mo;
    mo.max_context = po.context_tokens;
    mo.layout = d.gpus[size_t(g)];
    mo.device = devices[size_t(g)];
    models.push_back(std::make_unique<CudaK3Model>(*host, mo));
  }
  auto run_multi = [&](std::vector<uint64_t>* counts) {
    std::vector<std::unique_ptr<CudaK3Session>> sessions;
    std::vector<LayerRangeSession*> ptrs;
    for (auto& m : models) {
      sessions.push_back(std::make_unique<CudaK3Session>(*m));
      ptrs.push_back(sessions.back().get());
    }
    K3Session cpu(*host);
    SplitSession s(cpu, ptrs, d);
    Measured m = run_session(s, o.prompt_len, o.new_tokens, sc.vocab);
    if (counts) {
      counts->assign(4, 0);
      (*counts)[0] = s.stats().device_handovers;
      for (auto& ss : sessions) {
        (*counts)[1] += ss->handovers().same_device;
        (*counts)[2] += ss->handovers().peer;
        (*counts)[3] += ss->handovers().host;
      }
    }
    sessions.clear();
    return m;
  };
  const int reps = std::max(1, o.reps);
  std::vector<Measured> runs;
  std::vector<uint64_t> counts;
  for (int r = 0; r < reps; ++r) runs.push_back(run_multi(&counts));
  const Measured m = summarize(runs);
  models.clear();  // the reference below needs the GPU memory
  host.reset();

  // The reference: the whole slice on one GPU (whole passes, every expert resident when they fit).
  Measured w;
  {
    auto host = K3Model::load(o.slice_root);
    CudaK3Model::Options mo;
    mo.max_context = po.context_tokens;
    mo.expert_slots = CudaK3Model::Options::kAutoSlots;
    mo.device = devices[0];
    CudaK3Model gm(*host, mo);
    std::vector<Measured> wr;
    for (int r = 0; r < reps; ++r) {
      CudaK3Session gs(gm);
      wr.push_back(run_session(gs, o.prompt_len, o.new_tokens, sc.vocab));
    }
    w = summarize(wr);
  }
  const bool same = m.ids == w.ids;
  out << "| run | predicted decode s/token (bound) | measured | measured / predicted | predicted prefill s/token "
         "(bound) | measured | "
         "measured / predicted | GPU-to-GPU hand-overs per run (within a device / peer / host) | ids |\n";
  out << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n";
  out << "| " << n << " GPUs, plan above | " << f3(p.decode.seconds_per_token) << " (" << p.decode.bound << ") | "
      << f3(m.decode_s) << " | " << f2(m.decode_s / p.decode.seconds_per_token) << " | "
      << f3(p.prefill.seconds_per_token) << " (" << p.prefill.bound << ") | " << f3(m.prefill_s) << " | "
      << f2(m.prefill_s / p.prefill.seconds_per_token) << " | " << counts[0] << " (" << counts[1] << " / " << counts[2]
      << " / " << counts[3] << ") | " << (same ? "identical to one GPU" : "DIFFER from one GPU") << " |\n";
  out << "| reference: the whole slice on one GPU | - | " << f3(w.decode_s) << " | - | - | " << f3(w.prefill_s)
      << " | - | - | - |\n\n";
  out << (same ? "Oracle: the ids over several GPUs are those of one GPU."
               : "ORACLE FAILED: the ids over several GPUs differ from one GPU's.")
      << "\n";
  return same;
}

}  // namespace deltafin::cuda
