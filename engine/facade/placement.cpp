#include "deltafin/placement.h"

#include <algorithm>

#include "base/error.h"
#include "deltafin/backend.h"

namespace deltafin {

placement::Plan make_placement_plan(const PlacementOptions& options, const std::string& root,
                                    const std::function<void(const std::string&)>& say) {
  const PlacementOptions& o = options;
  using namespace placement;
  std::string note;
  const ModelByteMap bytes = ModelByteMap::for_model_root(root, &note);
  if (!note.empty() && say) say(note);

  MachineBudget budget;
  Bandwidths r;
  if (o.other_machine) {
    if (!(o.ram_budget_gb > 0))
      throw Error("--other-machine needs --ram-budget", "give the RAM of the machine to plan for, in GB");
    r = assumed_desktop();
  } else {
    budget = this_machine_ram();
    if (o.use_gpus) {
      const auto gpus = cuda_gpus();
      for (size_t i = 0; i < gpus.size(); ++i) {
        const auto& g = gpus[i];
        budget.gpus.push_back(GpuBudget{g.name, g.usable_bytes(), g.total_bytes, int(i)});
      }
    }
    if (o.ram_budget_gb > 0) set_ram_budget(budget, o.ram_budget_gb);  // refused before any probing
    if (!o.vram_budget.empty()) {
      if (!o.use_gpus) throw Error("--vram-budget applies to --device cuda", "leave it out for the CPU");
      set_vram_budgets(budget, parse_gb_list(o.vram_budget, "--vram-budget"), false);
    }
    if (o.probe && !note.empty() && !o.rates.disk_gbps && !load_cached_bandwidths(root))
      throw Error("there are no shards in " + root + " to measure the disk on",
                  "give --disk-gbps, or plan an installed model");
    std::optional<Bandwidths> cached;
    if (!o.reprobe) cached = load_cached_bandwidths(root);
    if (cached) {
      r = *cached;
    } else if (!o.probe) {
      r = assumed_desktop();
    } else {
      if (say) say("measuring this machine's rates (once; cached in " + bandwidth_cache_path(root) + ")");
      probe_cpu(r);
      if (note.empty()) probe_disk(r, root);
      if (!budget.gpus.empty()) {
        probe_cuda_rates(r.h2d_gbps, r.hbm_gbps, r.gpu_tflops);
      }
      r.source = "measured";
      if (note.empty()) save_cached_bandwidths(root, r);
    }
    if (o.probe && !budget.gpus.empty() && r.h2d_gbps == 0) {
      probe_cuda_rates(r.h2d_gbps, r.hbm_gbps, r.gpu_tflops);
    }
  }
  o.rates.apply(r);
  if (o.other_machine) {
    set_ram_budget(budget, o.ram_budget_gb);
    if (!o.vram_budget.empty()) set_vram_budgets(budget, parse_gb_list(o.vram_budget, "--vram-budget"), true);
  }
  // A GPU whose free memory cannot hold one layer's working set is left out (only when its budget
  // was not given: a given budget that small is an error).
  if (o.vram_budget.empty() && !budget.gpus.empty()) {
    PlanOptions po;
    po.context_tokens = o.context;
    const uint64_t state = bytes.state_bytes(o.context);
    const uint64_t need = po.gpu_scratch_bytes + state + std::max(bytes.largest_unit_bytes(), uint64_t(1));
    std::erase_if(budget.gpus, [&](const GpuBudget& g) {
      if (g.budget >= need) return false;
      if (say)
        say(g.name + " has " + format_gb(g.budget) + " free, below the " + format_gb(need) +
            " one layer needs: not used");
      return true;
    });
  }
  PlanOptions po;
  po.context_tokens = o.context;
  return make_plan(bytes, budget, r, po);
}

}  // namespace deltafin
