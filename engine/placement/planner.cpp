#include "placement/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace deltafin::placement {

const char* home_name(Home h) {
  switch (h) {
    case Home::Vram:
      return "VRAM";
    case Home::Ram:
      return "RAM";
    case Home::Disk:
      return "disk";
  }
  return "?";
}

uint64_t Plan::spine_in(Home h) const {
  uint64_t n = 0;
  for (const auto& u : units)
    if (u.home == h) n += u.bytes;
  return n;
}

uint64_t Plan::spine_in_gpu(int gpu) const {
  uint64_t n = 0;
  for (const auto& u : units)
    if (u.home == Home::Vram && u.gpu == gpu) n += u.bytes;
  return n;
}

int Plan::streamed_units() const {
  int n = 0;
  for (const auto& u : units) n += u.home == Home::Disk;
  return n;
}

namespace {

// Time of one unit's matrices on a device: its memory read or its arithmetic, whichever is longer.
double cpu_time(const Bandwidths& r, double bytes, double flops) {
  return std::max(bytes / (r.cpu_bf16_gbps * 1e9), flops / (r.cpu_gflops * 1e9));
}
double gpu_time(const Bandwidths& r, double bytes, double flops) {
  return std::max(bytes / (r.hbm_gbps * 1e9), flops / (r.gpu_tflops * 1e12));
}

// Expected distinct experts of one layer in a pass of T rows, each row choosing k of E uniformly.
double distinct_experts(int E, int k, int T) {
  if (E <= 0) return 0;
  return E * (1.0 - std::pow(1.0 - double(k) / E, T));
}

void predict(Plan& p, PhasePrediction& out, int T, bool prefill) {
  const Bandwidths& r = p.rates;
  const ModelByteMap& m = p.bytes;
  out = PhasePrediction{};
  out.rows = T;
  // Each GPU's VRAM tier serves the layers that GPU computes: the share of their experts it holds.
  const size_t ngpu = p.experts.vram_bytes.size();
  std::vector<double> gpu_expert_total(ngpu, 0.0);  // all expert bytes of the layers each GPU computes in this phase
  // Whether each GPU copies a MoE layer's experts ahead, under the MoE layer before it: the engine
  // does so where both are computed by that GPU in this phase and the later one lives in its VRAM
  // (a layer streamed to the GPU per pass has no router there yet to guess with).
  std::vector<char> gpu_copies_ahead(ngpu, 0);
  int moe_before = kCpu;  // the device of the MoE layer before, in this phase
  for (const auto& u : p.units) {
    const int dev = prefill ? u.prefill_device : u.decode_device;
    if (u.unit < 0 || !m.layers[u.unit].moe) continue;
    if (dev != kCpu && size_t(dev) < ngpu) {
      gpu_expert_total[size_t(dev)] += double(m.experts) * m.expert_bytes;
      if (moe_before == dev && u.home == Home::Vram && u.gpu == dev) gpu_copies_ahead[size_t(dev)] = 1;
    }
    moe_before = dev;
  }
  const double f_ram = m.all_expert_bytes() ? std::min(1.0, double(p.experts.ram_bytes) / m.all_expert_bytes()) : 1.0;
  const double d = distinct_experts(m.experts, m.top_k, T);
  const double eb = double(m.expert_bytes);
  // A GPU's expert kernel reads all of a layer's experts from VRAM at once, so the slots of a
  // pass's misses cannot hold anything for later: of S slots, S - misses keep experts, and with
  // uniform routing the hit fraction f solves f * N = S - (1 - f) * d, f = (S - d) / (N - d), for
  // N experts in the layers that GPU computes and d distinct experts per layer and pass. Where it
  // copies a layer's experts ahead (above), under the compute of the layer before, two layers'
  // misses hold slots at once: f * N = S - 2 (1 - f) d, f = (S - 2d) / (N - 2d)
  // (test_expert_slot_map, copiesAheadCopyNoMoreThanTheMisses; the slice's 96 GB rows: 0.28 instead of 0.35).
  std::vector<double> f_vram_of(ngpu, 0.0);
  for (size_t g = 0; g < ngpu; ++g) {
    if (!(gpu_expert_total[g] > 0) || !(eb > 0)) continue;
    const double S = double(p.experts.vram_bytes[g]) / eb, N = gpu_expert_total[g] / eb;
    const double held = gpu_copies_ahead[g] ? 2 * d : d;
    f_vram_of[g] = S >= N ? 1.0 : N > held ? std::clamp((S - held) / (N - held), 0.0, 1.0) : 0.0;
  }
  for (const auto& u : p.units) {
    const int dev = prefill ? u.prefill_device : u.decode_device;
    const double bytes = double(u.bytes + u.router_bytes), flops = double(u.flops_per_row) * T;
    if (u.home == Home::Disk) out.disk_s += u.bytes / (r.disk_gbps * 1e9);
    if (dev == kCpu) {
      out.cpu_s += cpu_time(r, bytes, flops);
    } else {
      if (u.home != Home::Vram) out.h2d_s += bytes / (r.h2d_gbps * 1e9);
      out.gpu_s += gpu_time(r, bytes, flops);
    }
    if (u.unit < 0 || !m.layers[u.unit].moe) continue;
    const double eflops = double(m.expert_flops_per_row) * T * m.top_k;
    if (dev == kCpu) {
      out.expert_disk_bytes += d * eb * (1 - f_ram);
      out.cpu_s += std::max(d * eb / (r.cpu_mxfp4_gbps * 1e9), eflops / (r.cpu_gflops * 1e9));
    } else {
      const double f_vram = size_t(dev) < ngpu ? f_vram_of[size_t(dev)] : 0.0;
      out.expert_disk_bytes += d * eb * (1 - f_vram) * (1 - f_ram);
      out.h2d_s += d * eb * (1 - f_vram) / (r.h2d_gbps * 1e9);
      out.expert_h2d_s += d * eb * (1 - f_vram) / (r.h2d_gbps * 1e9);
      out.gpu_s += gpu_time(r, d * eb, eflops);
    }
  }
  out.disk_s += out.expert_disk_bytes / (r.disk_gbps * 1e9);
  // Reads and copies overlap the compute (double buffers, prefetch); the CPU and the GPUs work
  // one after the other, layer by layer (a pass's layer ranges run one device at a time, so the
  // GPUs' times add up, and so do their copies over PCIe). A layer's expert copies wait for its
  // routing in this very pass, so they overlap only the GPU's own work (a layer's copies under the
  // layer before it), never the CPU's layers: where the CPU computes too, the GPU's side of a pass
  // is its compute or its expert copies, whichever is longer. Units' copies and disk reads are
  // known before the pass and overlap everything.
  const double gpu_side = out.cpu_s > 0 ? std::max(out.gpu_s, out.expert_h2d_s) : out.gpu_s;
  const double compute = out.cpu_s + gpu_side;
  double pass = compute;
  out.bound = gpu_side > out.cpu_s ? (gpu_side > out.gpu_s ? "PCIe" : "GPU") : "CPU";
  if (out.disk_s > pass) {
    pass = out.disk_s;
    out.bound = "disk";
  }
  if (out.h2d_s > pass) {
    pass = out.h2d_s;
    out.bound = "PCIe";
  }
  out.seconds_per_token = pass / T;
}

}  // namespace

namespace {

Plan plan_with(const ModelByteMap& m, const MachineBudget& budget, const Bandwidths& r, const PlanOptions& o,
               bool gpu_stream_buffers) {
  Plan p;
  p.bytes = m;
  p.budget = budget;
  p.rates = r;
  p.options = o;
  if (!(r.disk_gbps > 0 && r.cpu_bf16_gbps > 0 && r.cpu_mxfp4_gbps > 0 && r.cpu_gflops > 0))
    throw Error("the planner needs the disk and CPU rates",
                "let it probe this machine, or give --disk-gbps and the CPU figures");
  const int ngpu = static_cast<int>(budget.gpus.size());
  if (ngpu > 0 && !r.has_gpu_figures())
    throw Error("the planner needs the GPU rates (PCIe, device memory, matmul) to place layers on a GPU",
                "give --h2d-gbps, --hbm-gbps and --gpu-tflops, or plan on a CUDA build that can probe them");

  // Units: every layer in order, then lm_head (the embedding is read one row per token).
  for (const auto& L : m.layers)
    p.units.push_back(UnitPlan{L.layer, L.matrix_bytes, L.router_bytes, L.flops_per_row, Home::Ram, -1, kCpu, kCpu});
  p.units.push_back(UnitPlan{kLmHeadUnit, m.tied_embeddings ? m.embed_bytes : m.lm_head_bytes, 0,
                             m.lm_head_flops_per_row, Home::Ram, -1, kCpu, kCpu});
  uint64_t largest = 0, total = 0;
  for (const auto& u : p.units) largest = std::max(largest, u.bytes), total += u.bytes;

  // RAM that every plan needs: routers and small tensors (widened to fp32), one CPU session's
  // state (fp64), scratch; plus two stream buffers when any unit streams.
  uint64_t small_widened = m.head_small_bytes * 2;
  for (const auto& L : m.layers) small_widened += L.small_bytes * 2 + L.router_bytes;
  const uint64_t state = m.state_bytes(o.context_tokens);
  // The RAM expert tier always has two slots (one expert computing while the next loads).
  const uint64_t expert_staging = 2 * m.expert_bytes;
  const uint64_t ram_fixed = small_widened + state + o.ram_scratch_bytes + expert_staging;
  p.ram_minimum = ram_fixed + 2 * largest;
  if (budget.ram_budget < p.ram_minimum)
    throw Error("RAM budget " + format_gb(budget.ram_budget) + " is below this model's smallest working set, " +
                    format_gb(p.ram_minimum) + " (routers and small tensors " + format_gb(small_widened) +
                    ", session state for " + std::to_string(o.context_tokens) + " tokens " + format_gb(state) +
                    ", scratch " + format_gb(o.ram_scratch_bytes) + ", two stream buffers of the largest layer " +
                    format_gb(2 * largest) + ")",
                "give --ram-budget " + format_gb_at_least(p.ram_minimum) + " or more");

  // VRAM: every GPU holds scratch and (the upper bound) the whole session state; GPU 0 also two
  // stream buffers when not every unit fits in VRAM (RAM-homed layers computed there stream in).
  const uint64_t gpu_state = m.state_bytes(o.context_tokens);
  p.vram_minimum = o.gpu_scratch_bytes + gpu_state + largest;
  uint64_t vram_total = 0;
  for (const auto& g : budget.gpus) vram_total += g.budget;
  const bool all_fit_vram = ngpu > 0 && vram_total >= total + ngpu * (o.gpu_scratch_bytes + gpu_state);
  std::vector<uint64_t> vram_avail(ngpu);
  p.vram_reserved.assign(ngpu, 0);
  for (int g = 0; g < ngpu; ++g) {
    if (budget.gpus[g].budget < p.vram_minimum)
      throw Error("VRAM budget " + format_gb(budget.gpus[g].budget) + " for " + budget.gpus[g].name +
                      " is below the smallest working set, " + format_gb(p.vram_minimum) + " (scratch " +
                      format_gb(o.gpu_scratch_bytes) + ", session state " + format_gb(gpu_state) +
                      ", the largest layer " + format_gb(largest) + ")",
                  "give --vram-budget " + format_gb_at_least(p.vram_minimum) + " or more for it");
    p.vram_reserved[g] =
        o.gpu_scratch_bytes + gpu_state + (g == 0 && !all_fit_vram && gpu_stream_buffers ? 2 * largest : 0);
    vram_avail[g] = budget.gpus[g].budget > p.vram_reserved[g] ? budget.gpus[g].budget - p.vram_reserved[g] : 0;
  }
  // Layers fill the GPUs in order from layer 0 (one hand-over per GPU boundary). When the whole
  // spine fits, each GPU takes a share of it in proportion to its room, so that every GPU keeps
  // room for an expert tier of its own layers (a GPU's tier serves only the layers it computes);
  // otherwise each GPU is filled before the next.
  auto need = [&](size_t i) { return p.units[i].bytes + p.units[i].router_bytes; };
  auto fill = [&](bool spread) {
    std::vector<uint64_t> room = vram_avail;
    std::vector<int> gpu_of(p.units.size(), -1);
    uint64_t all = 0, avail_sum = 0, placed = 0, avail_before = 0;
    for (size_t i = 0; i < p.units.size(); ++i) all += need(i);
    for (uint64_t a : room) avail_sum += a;
    size_t next = 0;
    for (int g = 0; g < ngpu && next < p.units.size(); ++g) {
      avail_before += room[size_t(g)];
      // Spread: GPU g stops once the units so far reach its cumulative share (the last takes the rest).
      const double share =
          spread && g + 1 < ngpu && avail_sum ? double(all) * double(avail_before) / double(avail_sum) : 1e300;
      while (next < p.units.size() && need(next) <= room[size_t(g)] &&
             double(placed) + 0.5 * double(need(next)) <= share) {
        gpu_of[next] = g;
        room[size_t(g)] -= need(next);
        placed += need(next++);
      }
    }
    if (spread && next < p.units.size()) return false;  // the shares left a unit over: fill in order instead
    for (size_t i = 0; i < p.units.size(); ++i)
      if (gpu_of[i] >= 0) {
        p.units[i].home = Home::Vram;
        p.units[i].gpu = gpu_of[i];
      }
    vram_avail = room;
    return true;
  };
  if (!(ngpu > 1 && all_fit_vram && fill(true))) fill(false);
  // lm_head is the largest single read of a pass: any GPU with room takes it.
  UnitPlan& head = p.units.back();
  if (head.home != Home::Vram)
    for (int g = ngpu - 1; g >= 0; --g)
      if (head.bytes <= vram_avail[g]) {
        head.home = Home::Vram;
        head.gpu = g;
        vram_avail[g] -= head.bytes;
        break;
      }

  // RAM takes what the GPUs did not, in order; the rest streams from disk.
  uint64_t rest = 0, rest_largest = 0;
  for (const auto& u : p.units)
    if (u.home != Home::Vram) rest += u.bytes, rest_largest = std::max(rest_largest, u.bytes);
  uint64_t ram_avail = budget.ram_budget - ram_fixed;
  if (rest > ram_avail) {
    p.ram_stream_buffers = 2 * rest_largest;
    ram_avail -= p.ram_stream_buffers;
  }
  bool full = false;
  for (auto& u : p.units) {
    if (u.home == Home::Vram) continue;
    if (!full && u.bytes <= ram_avail) {
      u.home = Home::Ram;
      ram_avail -= u.bytes;
    } else {
      u.home = Home::Disk;
      full = true;  // keep the streamed units contiguous: one stream, read in layer order
    }
  }
  p.ram_reserved = ram_fixed - expert_staging + p.ram_stream_buffers;  // the staging slots count as expert tier

  // Expert tiers get what is left.
  const uint64_t eb = std::max<uint64_t>(m.expert_bytes, 1);
  p.experts.vram_bytes.assign(ngpu, 0);
  for (int g = 0; g < ngpu; ++g) {
    const uint64_t slots = vram_avail[g] / eb;
    p.experts.vram_slots += slots;
    p.experts.vram_bytes[g] = slots * eb;
  }
  p.experts.ram_slots = ram_avail / eb + (m.expert_bytes ? 2 : 0);
  p.experts.ram_bytes = p.experts.ram_slots * eb;
  const uint64_t all_experts = m.all_expert_bytes();
  if (p.experts.ram_bytes > all_experts) {
    p.experts.ram_slots = uint64_t(m.experts) * m.moe_layers;
    p.experts.ram_bytes = all_experts;
  }

  // Which device computes each unit not in VRAM: the CPU where it holds the bytes, or a GPU after
  // a copy over PCIe, whichever is faster for that phase's rows.
  const int prefill_T = ngpu > 0 ? o.gpu_prefill_rows : o.prefill_rows;
  for (auto& u : p.units) {
    if (u.home == Home::Vram) {
      u.decode_device = u.prefill_device = u.gpu;
      continue;
    }
    if (ngpu == 0) continue;
    const double bytes = double(u.bytes + u.router_bytes);
    auto gpu_faster = [&](int T) {
      const double flops = double(u.flops_per_row) * T;
      const double on_gpu = std::max(bytes / (r.h2d_gbps * 1e9), gpu_time(r, bytes, flops));
      return on_gpu < cpu_time(r, bytes, flops);
    };
    u.decode_device = gpu_faster(1) ? 0 : kCpu;
    u.prefill_device = gpu_faster(prefill_T) ? 0 : kCpu;
    if (u.decode_device != u.prefill_device) {
      int from = 2;
      while (from < prefill_T && (gpu_faster(from) ? 0 : kCpu) != u.prefill_device) ++from;
      p.prefill_from_rows = std::max(p.prefill_from_rows, from);
    }
  }

  predict(p, p.decode, 1, false);
  predict(p, p.prefill, prefill_T, true);
  return p;
}

}  // namespace

bool whole_spine_fits_gpu(const ModelByteMap& bytes, uint64_t free_vram, int64_t context, const PlanOptions& o) {
  const uint64_t need = bytes.spine_bytes() + bytes.state_bytes(context) + o.gpu_scratch_bytes;
  return need <= free_vram;
}

Plan make_plan(const ModelByteMap& m, const MachineBudget& budget, const Bandwidths& r, const PlanOptions& o) {
  Plan p = plan_with(m, budget, r, o, true);
  // GPU 0's two stream buffers serve only units a GPU computes from RAM or disk; without any, the
  // VRAM goes to layers and experts instead.
  const bool gpu_streams = std::any_of(p.units.begin(), p.units.end(), [](const UnitPlan& u) {
    return u.home != Home::Vram && (u.decode_device != kCpu || u.prefill_device != kCpu);
  });
  if (!budget.gpus.empty() && !gpu_streams) p = plan_with(m, budget, r, o, false);
  if (p.streamed_units() > 0)
    p.notes.push_back(std::to_string(p.streamed_units()) +
                      " spine unit(s) do not fit in RAM: read per pass with direct I/O, double-buffered");
  p.notes.push_back("expert hit rates assume uniform routing; real routing is skewed, so the caches do better");
  return p;
}

void repredict(Plan& p, const Bandwidths& rates) {
  p.rates = rates;
  predict(p, p.decode, p.decode.rows, false);
  predict(p, p.prefill, p.prefill.rows, true);
}

std::string what_would_help(const Plan& base) {
  struct Option {
    std::string what;
    MachineBudget budget;
    Bandwidths rates;
  };
  std::vector<Option> opts;
  for (uint64_t add : {64ull, 128ull}) {
    Option o{"+" + std::to_string(add) + " GB RAM", base.budget, base.rates};
    o.budget.ram_budget += add * 1000000000ull;
    opts.push_back(o);
  }
  {
    Option o{"", base.budget, base.rates};
    if (o.budget.gpus.empty()) {
      o.what = "a 24 GB GPU";
      const Bandwidths d = assumed_desktop();
      o.rates.h2d_gbps = d.h2d_gbps;
      o.rates.hbm_gbps = d.hbm_gbps;
      o.rates.gpu_tflops = d.gpu_tflops;
    } else {
      o.what = "another " + format_gb(o.budget.gpus.back().budget) + " GPU";
    }
    const uint64_t b = o.budget.gpus.empty() ? 24000000000ull : o.budget.gpus.back().budget;
    o.budget.gpus.push_back(GpuBudget{"GPU " + std::to_string(o.budget.gpus.size()), b, 0});
    opts.push_back(o);
  }
  {
    Option o{"a second NVMe drive striped with the first", base.budget, base.rates};  // "why" below names it
    o.rates.disk_gbps *= 2;
    opts.push_back(o);
  }
  const double before = base.decode.seconds_per_token;
  double best = before * 0.95;  // smaller gains are within the prediction's error
  std::string out;
  for (const auto& o : opts) {
    Plan p;
    try {
      p = make_plan(base.bytes, o.budget, o.rates, base.options);
    } catch (const Error&) {
      continue;
    }
    if (p.decode.seconds_per_token >= best) continue;
    best = p.decode.seconds_per_token;
    std::string why;
    if (o.rates.disk_gbps != base.rates.disk_gbps) why = "reads twice as fast, then " + p.decode.bound + "-bound";
    else if (base.spine_in(Home::Disk) > 0 && p.spine_in(Home::Disk) == 0 &&
             p.spine_in(Home::Vram) <= base.spine_in(Home::Vram))
      why = "spine fully in RAM";
    else if (p.spine_in(Home::Vram) > base.spine_in(Home::Vram))
      why = format_gb(p.spine_in(Home::Vram) - base.spine_in(Home::Vram)) + " more spine in VRAM";
    else if (p.experts.ram_bytes > base.experts.ram_bytes)
      why = "RAM expert tier " + format_gb(base.experts.ram_bytes) + " -> " + format_gb(p.experts.ram_bytes);
    else why = "bound: " + p.decode.bound;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: %s, predicted %.2f -> %.2f s/token", o.what.c_str(), why.c_str(), before,
                  p.decode.seconds_per_token);
    out = buf;
  }
  return out;
}

}  // namespace deltafin::placement
