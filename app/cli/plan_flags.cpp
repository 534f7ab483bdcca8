#include "plan_flags.h"

#include <algorithm>

#include "base/error.h"
#include "cuda_device.h"

namespace deltafin::cli {

void PlanFlags::add_budget_options(CLI::App* c) {
  c->add_option("--vram-budget", vram_budget, "VRAM the plan may use, GB per GPU, comma-separated (default: free VRAM)");
  c->add_option("--ram-budget", ram_budget_gb, "RAM the plan may use in GB (default: free memory less a safety margin)");
}

void PlanFlags::add_rate_options(CLI::App* c) {
  auto rate = [&](const char* flag, std::optional<double>& dst, const char* what) {
    c->add_option_function<double>(flag, [&dst](double v) { dst = v; }, what);
  };
  rate("--disk-gbps", rates.disk_gbps, "Assume this direct-read disk rate in GB/s instead of the measured one");
  rate("--ram-gbps", rates.ram_gbps, "Assume this RAM read rate in GB/s");
  rate("--cpu-bf16-gbps", rates.cpu_bf16_gbps, "Assume this CPU BF16 matmul rate at one row, GB/s of weights");
  rate("--cpu-mxfp4-gbps", rates.cpu_mxfp4_gbps, "Assume this CPU MXFP4 expert matmul rate at one row, GB/s");
  rate("--cpu-gflops", rates.cpu_gflops, "Assume this CPU matmul rate at many rows, GFLOP/s");
  rate("--h2d-gbps", rates.h2d_gbps, "Assume this pinned host-to-GPU copy rate in GB/s");
  rate("--hbm-gbps", rates.hbm_gbps, "Assume this GPU memory rate in GB/s");
  rate("--gpu-tflops", rates.gpu_tflops, "Assume this GPU matmul rate at many rows, TFLOP/s");
  c->add_flag("--reprobe", reprobe, "Measure this machine's rates again (they are cached beside the model)");
  c->add_flag("--other-machine", other_machine,
              "Plan for a machine described by the flags: budgets are not checked against this one, rates not "
              "measured (unset ones are the assumed desktop of docs/PLACEMENT.md)");
  c->add_option("--context", context, "Tokens of context each session reserves memory for")->capture_default_str();
}

placement::Plan PlanFlags::make(const std::string& root, const std::function<void(const std::string&)>& say) const {
  using namespace placement;
  std::string note;
  const ModelByteMap bytes = ModelByteMap::for_model_root(root, &note);
  if (!note.empty() && say) say(note);

  MachineBudget budget;
  Bandwidths r;
  if (other_machine) {
    if (!(ram_budget_gb > 0)) throw Error("--other-machine needs --ram-budget", "give the RAM of the machine to plan for, in GB");
    r = assumed_desktop();
  } else {
    budget = this_machine_ram();
    if (use_gpus)
      for (const auto& g : cuda_gpus()) {
        const uint64_t margin = 1ull << 30;  // the driver and other processes
        budget.gpus.push_back(GpuBudget{g.name, g.free_bytes > margin ? g.free_bytes - margin : 0, g.total_bytes});
      }
    if (ram_budget_gb > 0) set_ram_budget(budget, ram_budget_gb);  // refused before any probing
    if (!vram_budget.empty()) {
      if (!use_gpus) throw Error("--vram-budget applies to --device cuda", "leave it out for the CPU");
      set_vram_budgets(budget, parse_gb_list(vram_budget, "--vram-budget"), false);
    }
    if (!note.empty() && !rates.disk_gbps && !load_cached_bandwidths(root))
      throw Error("there are no shards in " + root + " to measure the disk on", "give --disk-gbps, or plan an installed model");
    std::optional<Bandwidths> cached;
    if (!reprobe) cached = load_cached_bandwidths(root);
    if (cached) {
      r = *cached;
    } else {
      if (say) say("measuring this machine's rates (once; cached in " + bandwidth_cache_path(root) + ")");
      probe_cpu(r);
      if (note.empty()) probe_disk(r, root);
      if (!budget.gpus.empty()) {
        probe_cuda_rates(r.h2d_gbps, r.hbm_gbps);
        r.gpu_tflops = assumed_desktop().gpu_tflops;  // not probed: an assumption until --gpu-tflops
      }
      r.source = "measured";
      if (note.empty()) save_cached_bandwidths(root, r);
    }
    if (!budget.gpus.empty() && r.h2d_gbps == 0) {
      probe_cuda_rates(r.h2d_gbps, r.hbm_gbps);
      r.gpu_tflops = assumed_desktop().gpu_tflops;
    }
  }
  rates.apply(r);
  if (other_machine) {
    set_ram_budget(budget, ram_budget_gb);
    if (!vram_budget.empty()) set_vram_budgets(budget, parse_gb_list(vram_budget, "--vram-budget"), true);
  }
  // A GPU whose free memory cannot hold one layer's working set is left out (only when its budget
  // was not given: a given budget that small is an error).
  if (vram_budget.empty() && !budget.gpus.empty()) {
    PlanOptions o;
    o.context_tokens = context;
    const uint64_t state = bytes.fixed_state_bytes + bytes.kv_bytes_per_token * uint64_t(context);
    const uint64_t need = o.gpu_scratch_bytes + state + std::max(bytes.largest_unit_bytes(), uint64_t(1));
    std::erase_if(budget.gpus, [&](const GpuBudget& g) {
      if (g.budget >= need) return false;
      if (say) say(g.name + " has " + format_gb(g.budget) + " free, below the " + format_gb(need) + " one layer needs: not used");
      return true;
    });
  }
  PlanOptions o;
  o.context_tokens = context;
  return make_plan(bytes, budget, r, o);
}

}  // namespace deltafin::cli
