// The CUDA forward following a placement (engine/cuda with placement::SplitLayout): greedy ids of
// the k3-tiny goldens with the layers split between the GPU and the CPU at every layer boundary,
// with the layers after the split streamed to the GPU (both kinds of pass, or prefill only, so the
// layers' states move between the devices), with lm_head on either side, and under the plans of a
// range of VRAM and RAM budgets (some streaming part of the spine from disk). Every arm must give
// the golden ids over the clear-margin steps, as the whole-GPU forward must, and the same ids as
// the whole-GPU and the CPU forwards wherever those two agree.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "cuda/gpu_rates.h"
#include "cuda/k3_cuda_model.h"
#include "cuda_k3_checks.h"
#include "cuda_k3_greedy.h"
#include "model/checkpoint.h"
#include "placement/machine_budget.h"
#include "placement/model_byte_map.h"
#include "placement/planner.h"
#include "placement/split_layout.h"
#include "placement/split_session.h"
#include "runtime/generate.h"
#include "support/golden_tensors.h"
#include "support/split_test_rates.h"

namespace deltafin::cuda::check {
namespace {

using namespace deltafin::placement;

}  // namespace

std::vector<Greedy> greedy_goldens(const std::string& dir) {
  std::ifstream f(dir + "/golden.json", std::ios::binary);
  if (!f) throw Error("cannot read " + dir + "/golden.json");
  std::stringstream ss;
  ss << f.rdbuf();
  const auto meta = nlohmann::json::parse(ss.str());
  const test::LoadedTensors g = test::load_tensors(dir + "/golden.safetensors");
  std::vector<Greedy> out;
  for (const auto& gr : meta["greedy"]) {
    const std::string G = "greedy." + std::to_string(gr["index"].get<int>()) + ".";
    Greedy x;
    const auto p64 = g.i64(G + "prompt_ids");
    x.prompt.assign(p64.begin(), p64.end());
    x.want = g.i64(G + "ids");
    const auto margins = g.f32(G + "margins");
    while (x.clear < x.want.size() && margins[x.clear] > 2e-3f) ++x.clear;
    out.push_back(std::move(x));
  }
  return out;
}

namespace {

std::vector<int32_t> ids_of(DecodeSession& s, const Greedy& g) {
  GenerateOptions go;
  go.max_new = int(g.want.size());
  return generate(s, g.prompt, go).ids;
}

size_t agree(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < std::min(a.size(), b.size()) && a[n] == b[n]) ++n;
  return n;
}

// One arm: the goldens' greedy ids under `layout` on a host model loaded with `spine`.
Result arm(const std::string& dir, const std::string& name, const SplitLayout& layout,
           std::optional<SpinePlacement> spine, const std::vector<Greedy>& gs,
           const std::vector<std::vector<int32_t>>& gpu_ids, const std::vector<std::vector<int32_t>>& cpu_ids) {
  K3Model::Options ho;
  ho.spine = std::move(spine);
  auto host = K3Model::load(dir, std::move(ho));
  CudaK3Model::Options mo;
  mo.max_context = 256;
  mo.layout = layout;
  CudaK3Model model(*host, mo);
  Result r{"split " + name, true, layout.describe()};
  for (size_t i = 0; i < gs.size(); ++i) {
    CudaK3Session gpu(model);
    K3Session cpu(*host);
    SplitSession s(cpu, gpu, model.layout());
    const auto ids = ids_of(s, gs[i]);
    bool golden = ids.size() == gs[i].want.size();
    for (size_t t = 0; t < gs[i].clear && golden; ++t) golden = ids[t] == gs[i].want[t];
    const size_t both = agree(gpu_ids[i], cpu_ids[i]);  // where the whole-GPU and CPU forwards agree
    const bool same = agree(ids, gpu_ids[i]) >= both && agree(ids, cpu_ids[i]) >= both;
    r.ok = r.ok && golden && same;
    r.detail += "; prompt " + std::to_string(i) + ": golden " + (golden ? "equal" : "DIFFERS") + " over " +
                std::to_string(gs[i].clear) + " clear steps, " + std::to_string(agree(ids, gpu_ids[i])) + "/" +
                std::to_string(ids.size()) + " equal to GPU-only, " + std::to_string(agree(ids, cpu_ids[i])) +
                " to CPU-only";
    r.detail += " (" + std::to_string(s.stats().handovers) + " hand-overs, " + std::to_string(s.stats().state_moves) +
                " state moves)";
  }
  return r;
}

}  // namespace

std::vector<Result> k3_split(const std::string& dir) {
  std::vector<Result> out;
  const auto gs = greedy_goldens(dir);
  std::vector<std::vector<int32_t>> gpu_ids, cpu_ids;
  {
    auto host = K3Model::load(dir);
    CudaK3Model::Options mo;
    mo.max_context = 256;
    CudaK3Model model(*host, mo);
    for (const auto& g : gs) {
      CudaK3Session s(model);
      gpu_ids.push_back(ids_of(s, g));
      K3Session c(*host);
      cpu_ids.push_back(ids_of(c, g));
    }
  }
  const int L = K3Config::load(dir + "/config.json").layers;
  const SplitUnit vram{GpuCopy::Vram, true, true, false}, cpu{}, streamed{GpuCopy::Streamed, true, true, false},
      prefill_only{GpuCopy::Streamed, false, true, false};
  for (int k = 0; k <= L; ++k) {
    const std::string at = " at layer " + std::to_string(k);
    for (int kind = 0; kind < 3; ++kind) {
      SplitLayout s;
      const SplitUnit tail = kind == 0 ? cpu : kind == 1 ? streamed : prefill_only;
      for (int l = 0; l < L; ++l) s.layers.push_back(l < k ? vram : tail);
      s.lm_head = kind == 0 ? (k == L ? vram : cpu) : tail;
      const char* what = kind == 0   ? "GPU | CPU"
                         : kind == 1 ? "GPU | streamed to the GPU"
                                     : "GPU | CPU decode, GPU prefill";
      out.push_back(arm(dir, std::string(what) + at, s, std::nullopt, gs, gpu_ids, cpu_ids));
      if (kind == 0) {  // lm_head on the other side of the last layer
        s.lm_head = k == L ? streamed : vram;
        out.push_back(arm(dir, std::string(what) + at + ", lm_head swapped", s, std::nullopt, gs, gpu_ids, cpu_ids));
      }
    }
  }

  // The planner's layouts for a range of budgets.
  auto ck = Checkpoint::open(dir);
  const K3Config c = K3Config::load(dir + "/config.json");
  const auto bytes = ModelByteMap::from_checkpoint(*ck, c);
  const PlanOptions o = deltafin::test::split_test_plan_options(256);
  MachineBudget b = deltafin::test::roomy_one_gpu_machine();
  const Plan full = make_plan(bytes, b, deltafin::test::split_test_rates(), o);
  const uint64_t vlo = full.vram_minimum, vhi = vlo + bytes.spine_bytes();
  for (int i = 0; i <= 5; ++i) {
    b.gpus[0].budget = vlo + (vhi - vlo) * uint64_t(i) / 5;
    b.ram_budget = i % 2 ? 1ull << 40 : full.ram_minimum + bytes.largest_unit_bytes();
    const Plan plan = make_plan(bytes, b, deltafin::test::split_test_rates(), o);
    out.push_back(arm(dir, "plan for VRAM " + format_gb(b.gpus[0].budget) + ", RAM " + format_gb(b.ram_budget),
                      split_layout(plan), host_spine_placement(plan), gs, gpu_ids, cpu_ids));
  }

  // A VRAM budget above the device's memory, and one below a layer's working set: errors that say so.
  const auto gpus = gpu_memory();
  if (!gpus.empty()) {
    MachineBudget m;
    m.gpus.push_back(GpuBudget{"GPU 0", gpus[0].free_bytes, gpus[0].total_bytes});
    std::string said;
    try {
      set_vram_budgets(m, {gpus[0].total_bytes + 1000000000ull}, false);
    } catch (const Error& e) {
      said = e.what();
    }
    out.push_back({"a VRAM budget above the device's memory is refused", !said.empty(), said});
    said.clear();
    b.gpus[0].budget = vlo - 1;
    try {
      make_plan(bytes, b, deltafin::test::split_test_rates(), o);
    } catch (const Error& e) {
      said = e.what();
    }
    out.push_back({"a VRAM budget below one layer's working set is refused, naming the minimum",
                   said.find(format_gb(vlo)) != std::string::npos, said});
  }
  return out;
}

}  // namespace deltafin::cuda::check
