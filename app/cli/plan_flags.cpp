#include "plan_flags.h"

namespace deltafin::cli {

void PlanFlags::add_budget_options(CLI::App* c) {
  c->add_option("--vram-budget", vram_budget,
                "VRAM the plan may use, GB per GPU, comma-separated (default: free VRAM)");
  c->add_option("--ram-budget", ram_budget_gb,
                "RAM the plan may use in GB (default: free memory less a safety margin)");
}

void PlanFlags::add_rate_options(CLI::App* c) {
  auto rate = [&](const char* flag, std::optional<double>& dst, const char* what) {
    c->add_option_function<double>(
        flag, [&dst](double v) { dst = v; }, what);
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

}  // namespace deltafin::cli
