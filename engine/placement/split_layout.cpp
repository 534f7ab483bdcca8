#include "placement/split_layout.h"

#include <cstdlib>
#include <string>

#include "base/error.h"

namespace deltafin::placement {

namespace {

const char* copy_name(const SplitUnit& u) {
  if (u.gpu == GpuCopy::Vram) return "VRAM";
  return u.from_disk ? "disk" : "RAM";
}

std::string compute_name(const SplitUnit& u) {
  if (u.decode_gpu && u.prefill_gpu) return u.gpu == GpuCopy::Vram ? "GPU" : "GPU, streamed";
  if (!u.decode_gpu && !u.prefill_gpu) return "CPU";
  return u.decode_gpu ? "GPU decode, CPU prefill" : "CPU decode, GPU prefill";
}

}  // namespace

bool SplitLayout::any_gpu() const {
  for (int u = 0; u < units(); ++u)
    if (unit(u).decode_gpu || unit(u).prefill_gpu) return true;
  return false;
}

bool SplitLayout::any_cpu() const {
  for (int u = 0; u < units(); ++u)
    if (!unit(u).decode_gpu || !unit(u).prefill_gpu) return true;
  return false;
}

int SplitLayout::streamed_units() const {
  int n = 0;
  for (int u = 0; u < units(); ++u) n += unit(u).gpu == GpuCopy::Streamed;
  return n;
}

void SplitLayout::check(int n_layers) const {
  if (int(layers.size()) != n_layers)
    throw Error("the GPU placement names " + std::to_string(layers.size()) + " layers, the model has " +
                std::to_string(n_layers));
  if (prefill_from_rows < 2)
    throw Error("the GPU placement runs passes of " + std::to_string(prefill_from_rows) +
                " rows as prompt passes (a pass of one row is always a decode pass)");
  for (int u = 0; u < units(); ++u) {
    const SplitUnit& s = unit(u);
    const std::string name = u == int(layers.size()) ? "lm_head" : "layer " + std::to_string(u);
    if ((s.decode_gpu || s.prefill_gpu) && s.gpu == GpuCopy::None)
      throw Error("the GPU placement computes " + name + " on the GPU without a copy of it there");
    if (s.gpu == GpuCopy::Vram && !(s.decode_gpu && s.prefill_gpu))
      throw Error("the GPU placement holds " + name + " in VRAM but computes it on the CPU");
    if (s.gpu == GpuCopy::Vram && s.from_disk)
      throw Error("the GPU placement reads " + name + " from disk although it is in VRAM");
  }
}

std::string SplitLayout::describe() const {
  std::string out;
  int i = 0;
  const int n = int(layers.size());
  while (i < n) {
    int j = i + 1;
    auto same = [&](const SplitUnit& a, const SplitUnit& b) {
      return a.gpu == b.gpu && a.decode_gpu == b.decode_gpu && a.prefill_gpu == b.prefill_gpu &&
             a.from_disk == b.from_disk;
    };
    while (j < n && same(layers[size_t(j)], layers[size_t(i)])) ++j;
    if (!out.empty()) out += ", ";
    out += (j - i == 1 ? "layer " + std::to_string(i) : "layers " + std::to_string(i) + "-" + std::to_string(j - 1)) +
           " " + copy_name(layers[size_t(i)]) + " (" + compute_name(layers[size_t(i)]) + ")";
    i = j;
  }
  if (!out.empty()) out += ", ";
  out += std::string("lm_head ") + copy_name(lm_head) + " (" + compute_name(lm_head) + ")";
  if (prefill_from_rows > 2)
    out += "; passes of fewer than " + std::to_string(prefill_from_rows) + " rows (verify) run as decode";
  return out;
}

SplitLayout all_on_gpu(int n_layers) {
  SplitLayout s;
  SplitUnit v{GpuCopy::Vram, true, true, false};
  s.layers.assign(size_t(n_layers), v);
  s.lm_head = v;
  return s;
}

SplitLayout split_layout(const Plan& p) {
  if (p.budget.gpus.size() > 1)
    throw Error("this plan spreads over " + std::to_string(p.budget.gpus.size()) + " GPUs: it runs as a device layout",
                "use placement::device_layout");
  return split_layout(p, 0);
}

SplitLayout split_layout(const Plan& p, int gpu) {
  const int ngpu = int(p.budget.gpus.size());
  if (gpu < 0 || (ngpu > 0 && gpu >= ngpu))
    throw Error("the plan has " + std::to_string(ngpu) + " GPU(s), there is no GPU " + std::to_string(gpu));
  SplitLayout s;
  s.prefill_from_rows = p.prefill_from_rows;
  for (const UnitPlan& u : p.units) {
    SplitUnit su;
    su.decode_gpu = u.decode_device == gpu;
    su.prefill_gpu = u.prefill_device == gpu;
    if (u.home == Home::Vram && u.gpu == gpu) su.gpu = GpuCopy::Vram;
    else if (u.home == Home::Vram && (su.decode_gpu || su.prefill_gpu))
      throw Error("the plan computes unit " + std::to_string(u.unit) + " on GPU " + std::to_string(gpu) +
                  " but holds it in GPU " + std::to_string(u.gpu) + "'s VRAM");
    else if (su.decode_gpu || su.prefill_gpu) su.gpu = GpuCopy::Streamed;
    su.from_disk = u.home == Home::Disk;
    if (u.unit == kLmHeadUnit) s.lm_head = su;
    else if (u.unit >= 0) s.layers.push_back(su);
  }
  if (size_t(gpu) < p.experts.vram_bytes.size() && p.bytes.expert_bytes > 0)
    s.vram_expert_slots = p.experts.vram_bytes[size_t(gpu)] / p.bytes.expert_bytes;
  s.check(int(s.layers.size()));
  return s;
}

void DeviceLayout::check(int n_layers) const {
  if (int(decode.size()) != n_layers + 1 || prefill.size() != decode.size())
    throw Error("the device layout names " + std::to_string(int(decode.size()) - 1) + " layers, the model has " +
                std::to_string(n_layers));
  const int ngpu = int(gpus.size());
  for (int g = 0; g < ngpu; ++g) {
    gpus[size_t(g)].check(n_layers);
    if (gpus[size_t(g)].prefill_from_rows != prefill_from_rows)
      throw Error("the device layout's GPU " + std::to_string(g) + " takes passes of " +
                  std::to_string(gpus[size_t(g)].prefill_from_rows) + " rows as prompt passes, the layout of " +
                  std::to_string(prefill_from_rows));
    for (int u = 0; u <= n_layers; ++u) {
      const SplitUnit& s = gpus[size_t(g)].unit(u);
      if (s.decode_gpu != (decode[size_t(u)] == g) || s.prefill_gpu != (prefill[size_t(u)] == g))
        throw Error("the device layout's GPU " + std::to_string(g) +
                    " does not compute what the layout gives it (unit " + std::to_string(u) + ")");
    }
  }
  for (int u = 0; u <= n_layers; ++u)
    for (int d : {decode[size_t(u)], prefill[size_t(u)]})
      if (d != kCpu && (d < 0 || d >= ngpu))
        throw Error("the device layout computes unit " + std::to_string(u) + " on GPU " + std::to_string(d) + " of " +
                    std::to_string(ngpu));
}

std::string DeviceLayout::describe() const {
  std::string out;
  for (size_t g = 0; g < gpus.size(); ++g)
    out += (g ? "; GPU " : "GPU ") + std::to_string(g) + ": " + gpus[g].describe();
  return out;
}

DeviceLayout device_layout(const Plan& p) {
  DeviceLayout d;
  d.prefill_from_rows = p.prefill_from_rows;
  const int ngpu = int(p.budget.gpus.size());
  for (int g = 0; g < ngpu; ++g) d.gpus.push_back(split_layout(p, g));
  for (const UnitPlan& u : p.units) {
    if (u.unit < 0 && u.unit != kLmHeadUnit) continue;
    d.decode.push_back(u.decode_device);
    d.prefill.push_back(u.prefill_device);
  }
  d.check(d.layers());
  return d;
}

DeviceLayout one_gpu(SplitLayout s) {
  DeviceLayout d;
  d.prefill_from_rows = s.prefill_from_rows;
  for (int u = 0; u < s.units(); ++u) {
    d.decode.push_back(s.unit(u).decode_gpu ? 0 : kCpu);
    d.prefill.push_back(s.unit(u).prefill_gpu ? 0 : kCpu);
  }
  d.gpus.push_back(std::move(s));
  d.check(d.layers());
  return d;
}

std::vector<GpuRange> gpu_ranges(const Plan& p) {
  std::vector<GpuRange> out;
  for (int g = 0; g < int(p.budget.gpus.size()); ++g) {
    GpuRange r;
    r.gpu = g;
    r.first = r.last = -1;
    for (const UnitPlan& u : p.units) {
      const bool here = u.home == Home::Vram && u.gpu == g;
      if (u.home != Home::Vram && (u.decode_device == g || u.prefill_device == g)) ++r.streamed;
      if (!here) continue;
      r.spine_bytes += u.bytes;
      if (u.unit == kLmHeadUnit) {
        r.lm_head = true;
        continue;
      }
      if (r.first < 0) r.first = u.unit;
      else if (u.unit != r.last)
        throw Error("GPU " + std::to_string(g) + " holds layers " + std::to_string(r.first) + "-" +
                    std::to_string(r.last - 1) + " and " + std::to_string(u.unit) + ": not one range");
      r.last = u.unit + 1;
    }
    if (r.first < 0) r.first = r.last = 0;
    out.push_back(r);
  }
  return out;
}

SpinePlacement host_spine_placement(const Plan& p) {
  SpinePlacement s;
  const bool streams = p.streamed_units() > 0;
  const bool shared = shared_spine_copy();
  for (const UnitPlan& u : p.units) {
    SpineHome h = SpineHome::Mapped;
    // A RAM unit only the GPU computes lives in its pinned copy: the mapped pages it was copied
    // from may leave the page cache. One only the CPU computes is copied into huge pages
    // (cpu_spine.h). One computed by both (CPU decode, GPU prefill) is owned where the GPU copies
    // from the host's buffer (shared_spine_copy); otherwise the GPU has a pinned copy, and the
    // unit is owned only where streamed bytes could push its mapped pages out: owning it always
    // would hold its bytes in RAM twice, which the plan does not count.
    const bool gpu_only = u.decode_device != kCpu && u.prefill_device != kCpu;
    const bool cpu_only = u.decode_device == kCpu && u.prefill_device == kCpu;
    if (u.home == Home::Disk) h = SpineHome::Streamed;
    else if (u.home == Home::Ram && (cpu_only || ((streams || shared) && !gpu_only))) h = SpineHome::Owned;
    if (u.unit == kLmHeadUnit) s.lm_head = h;
    else if (u.unit >= 0) s.layers.push_back(h);
  }
  return s;
}

bool shared_spine_copy() {
  const char* v = std::getenv("DELTAFIN_SHARED_SPINE");
  return v && std::string(v) == "1";
}

std::vector<PassSegment> pass_segments(const SplitLayout& s, int T) {
  std::vector<PassSegment> out;
  for (int l = 0; l < int(s.layers.size()); ++l) {
    const bool g = s.on_gpu(l, T);
    if (out.empty() || out.back().gpu != g) out.push_back(PassSegment{g, l, l});
    out.back().last = l + 1;
  }
  return out;
}

std::vector<DeviceSegment> device_segments(const DeviceLayout& d, int T) {
  std::vector<DeviceSegment> out;
  for (int l = 0; l < d.layers(); ++l) {
    const int dev = d.device(l, T);
    if (out.empty() || out.back().device != dev) out.push_back(DeviceSegment{dev, l, l});
    out.back().last = l + 1;
  }
  return out;
}

std::vector<StreamStep> stream_schedule(const SplitLayout& s, int T) {
  std::vector<int> st;  // the streamed units this pass computes on the GPU, in pass order
  for (int u = 0; u < s.units(); ++u)
    if (s.unit(u).gpu == GpuCopy::Streamed && s.on_gpu(u, T)) st.push_back(u);
  std::vector<StreamStep> out;
  const int n = int(st.size());
  std::vector<bool> issued(size_t(n), false);
  auto copy = [&](int i) {
    out.push_back(StreamStep{StreamStep::Copy, st[size_t(i)], i % 2, i >= 2 ? st[size_t(i - 2)] : -1});
    issued[size_t(i)] = true;
  };
  auto from_disk = [&](int i) { return s.unit(st[size_t(i)]).from_disk; };
  if (n > 0 && !from_disk(0)) copy(0);
  for (int i = 0; i < n; ++i) {
    if (!issued[size_t(i)]) copy(i);
    if (i + 1 < n && !from_disk(i + 1)) copy(i + 1);
    out.push_back(StreamStep{StreamStep::Compute, st[size_t(i)], i % 2, -1});
  }
  return out;
}

}  // namespace deltafin::placement
