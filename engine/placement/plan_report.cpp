#include "placement/plan_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "placement/machine_budget.h"
#include "placement/split_layout.h"

namespace deltafin::placement {

namespace {

std::string device_name(int d) { return d == kCpu ? "CPU" : "GPU " + std::to_string(d); }

std::string where(const UnitPlan& u) {
  if (u.home == Home::Vram) return "VRAM (GPU " + std::to_string(u.gpu) + ")";
  return home_name(u.home);
}

std::string unit_name(int unit) { return unit == kLmHeadUnit ? "lm_head" : "layer " + std::to_string(unit); }

std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

std::string range_text(const GpuRange& r) {
  std::string s = r.first == r.last       ? "no layers"
                  : r.last - r.first == 1 ? "layer " + std::to_string(r.first)
                                          : "layers " + std::to_string(r.first) + "-" + std::to_string(r.last - 1);
  if (r.lm_head) s += " + lm_head";
  return s;
}

}  // namespace

std::string plan_gpus(const Plan& p) {
  std::string out;
  const std::vector<GpuRange> ranges = gpu_ranges(p);
  for (const GpuRange& r : ranges) {
    const GpuBudget& g = p.budget.gpus[size_t(r.gpu)];
    // The budget's name already says "GPU i" on this machine; another machine's GPUs are only numbered.
    const std::string name = g.name.rfind("GPU " + std::to_string(r.gpu), 0) == 0
                                 ? g.name
                                 : "GPU " + std::to_string(r.gpu) + " (" + g.name + ")";
    char line[512];
    std::snprintf(
        line, sizeof line, "%s: budget %s, %s in VRAM (%s)%s, expert tier %s\n", name.c_str(),
        format_gb(g.budget).c_str(), range_text(r).c_str(), format_gb(r.spine_bytes).c_str(),
        r.streamed ? (", streams " + std::to_string(r.streamed) + " unit(s) from RAM/disk").c_str() : "",
        format_gb(r.gpu < int(p.experts.vram_bytes.size()) ? p.experts.vram_bytes[size_t(r.gpu)] : 0).c_str());
    out += line;
  }
  return out;
}

std::string plan_table(const Plan& p) {
  std::string out = plan_gpus(p);
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %10s  %-14s %-8s %-8s\n", "spine", "GB", "lives in", "decode", "prefill");
  out += line;
  size_t i = 0;
  while (i < p.units.size()) {
    size_t j = i;
    uint64_t bytes = 0;
    auto same = [&](const UnitPlan& a, const UnitPlan& b) {
      return a.home == b.home && a.gpu == b.gpu && a.decode_device == b.decode_device &&
             a.prefill_device == b.prefill_device && (a.unit >= 0) == (b.unit >= 0);
    };
    while (j < p.units.size() && same(p.units[i], p.units[j])) bytes += p.units[j++].bytes;
    const UnitPlan& a = p.units[i];
    std::string name = a.unit < 0   ? unit_name(a.unit)
                       : j - i == 1 ? unit_name(a.unit)
                                    : "layers " + std::to_string(a.unit) + "-" + std::to_string(p.units[j - 1].unit);
    std::snprintf(line, sizeof line, "%-16s %10.2f  %-14s %-8s %-8s\n", name.c_str(), bytes / 1e9, where(a).c_str(),
                  device_name(a.decode_device).c_str(), device_name(a.prefill_device).c_str());
    out += line;
    i = j;
  }
  std::snprintf(line, sizeof line, "%-16s %10.2f  %-14s (routers, norms, session state, scratch)\n", "resident",
                p.ram_reserved / 1e9, "RAM");
  out += line;
  if (p.ram_stream_buffers)
    out += "  of which two stream buffers: " + fmt("%.2f GB", p.ram_stream_buffers / 1e9) + "\n";
  for (size_t g = 0; g < p.experts.vram_bytes.size(); ++g) {
    std::snprintf(line, sizeof line, "%-16s %10.2f  %-14s (%s)\n", "expert tier", p.experts.vram_bytes[g] / 1e9,
                  ("VRAM (GPU " + std::to_string(g) + ")").c_str(), p.budget.gpus[g].name.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "%-16s %10.2f  %-14s (%.1f%% of %.1f GB of experts)\n", "expert tier",
                p.experts.ram_bytes / 1e9, "RAM",
                p.bytes.all_expert_bytes() ? 100.0 * p.experts.ram_bytes / p.bytes.all_expert_bytes() : 0.0,
                p.bytes.all_expert_bytes() / 1e9);
  out += line;
  auto phase = [&](const char* name, const PhasePrediction& ph) {
    char b[256];
    std::snprintf(b, sizeof b,
                  "%-8s %.3f s/token at %d row(s) per pass, bound by %s (per pass: disk %.3f s, PCIe %.3f s, CPU %.3f "
                  "s, GPU %.3f s)\n",
                  name, ph.seconds_per_token, ph.rows, ph.bound.c_str(), ph.disk_s, ph.h2d_s, ph.cpu_s, ph.gpu_s);
    return std::string(b);
  };
  out += phase("decode", p.decode);
  out += phase("prefill", p.prefill);
  if (p.prefill_from_rows > 2)
    out += "passes of fewer than " + std::to_string(p.prefill_from_rows) +
           " rows (speculative verify) compute where decode does: the GPU is faster for the CPU's layers only from "
           "there on\n";
  for (const auto& n : p.notes) out += "note: " + n + "\n";
  return out;
}

std::string plan_summary(const Plan& p) {
  uint64_t vram_experts = 0;
  for (auto v : p.experts.vram_bytes) vram_experts += v;
  const uint64_t vram = p.spine_in(Home::Vram), ram = p.spine_in(Home::Ram), disk = p.spine_in(Home::Disk);
  // %.3g: a demo model's milliseconds and the real model's seconds both keep their digits.
  char secs[160];
  std::snprintf(secs, sizeof secs, "decode %.3g s/token (%s-bound), prefill %.3g s/token (%s-bound)",
                p.decode.seconds_per_token, p.decode.bound.c_str(), p.prefill.seconds_per_token,
                p.prefill.bound.c_str());
  return "plan: spine " + format_gb(vram + ram + disk) + " = " + format_gb(vram) + " VRAM + " + format_gb(ram) +
         " RAM + " + format_gb(disk) + " disk-streamed; expert tiers " + format_gb(vram_experts) + " VRAM + " +
         format_gb(p.experts.ram_bytes) + " RAM; " + secs;
}

std::string plan_rates(const Plan& p) {
  const Bandwidths& r = p.rates;
  char b[512];
  std::snprintf(
      b, sizeof b,
      "rates (%s): disk %.2f GB/s, RAM %.1f GB/s, CPU BF16 %.1f GB/s, MXFP4 %.1f GB/s, %.0f GFLOP/s (%d threads)",
      r.source.c_str(), r.disk_gbps, r.ram_gbps, r.cpu_bf16_gbps, r.cpu_mxfp4_gbps, r.cpu_gflops, r.cpu_threads);
  std::string s = b;
  if (!p.budget.gpus.empty()) {
    std::snprintf(b, sizeof b, "; PCIe %.1f GB/s, device memory %.0f GB/s, %.0f TFLOP/s", r.h2d_gbps, r.hbm_gbps,
                  r.gpu_tflops);
    s += b;
  }
  return s;
}

std::string plan_json(const Plan& p) {
  nlohmann::json j;
  j["spine_bytes"] = {
      {"vram", p.spine_in(Home::Vram)}, {"ram", p.spine_in(Home::Ram)}, {"disk", p.spine_in(Home::Disk)}};
  j["ram_budget"] = p.budget.ram_budget;
  j["ram_reserved"] = p.ram_reserved;
  j["ram_minimum"] = p.ram_minimum;
  j["expert_tiers"] = {{"vram", p.experts.vram_bytes}, {"ram", p.experts.ram_bytes}};
  auto& gpus = j["gpus"] = nlohmann::json::array();
  for (const GpuRange& r : gpu_ranges(p)) {
    const GpuBudget& g = p.budget.gpus[size_t(r.gpu)];
    gpus.push_back(
        {{"index", r.gpu},
         {"name", g.name},
         {"budget", g.budget},
         {"device", g.device},
         {"layers", r.first == r.last ? nlohmann::json(nullptr) : nlohmann::json::array({r.first, r.last - 1})},
         {"lm_head", r.lm_head},
         {"spine_bytes", r.spine_bytes},
         {"streamed_units", r.streamed},
         {"expert_tier", size_t(r.gpu) < p.experts.vram_bytes.size() ? p.experts.vram_bytes[size_t(r.gpu)] : 0}});
  }
  auto& units = j["units"] = nlohmann::json::array();
  for (const auto& u : p.units)
    units.push_back({{"unit", unit_name(u.unit)},
                     {"bytes", u.bytes},
                     {"home", home_name(u.home)},
                     {"gpu", u.gpu},
                     {"decode", device_name(u.decode_device)},
                     {"prefill", device_name(u.prefill_device)}});
  for (auto [name, ph] : {std::pair<const char*, const PhasePrediction*>{"decode", &p.decode}, {"prefill", &p.prefill}})
    j[name] = {{"seconds_per_token", ph->seconds_per_token},
               {"bound", ph->bound},
               {"rows", ph->rows},
               {"disk_s", ph->disk_s},
               {"h2d_s", ph->h2d_s},
               {"cpu_s", ph->cpu_s},
               {"gpu_s", ph->gpu_s}};
  j["prefill_from_rows"] = p.prefill_from_rows;
  j["rates"] = nlohmann::json::parse(p.rates.json());
  return j.dump(2);
}

}  // namespace deltafin::placement
