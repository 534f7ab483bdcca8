// Machine rates for the split and placement tests on tiny models (k3-tiny, the synthesized test
// models): the CPU streams weights a little faster than PCIe, so a unit in RAM decodes on the CPU;
// its matmul rate is low, so prefill passes copy it to the GPU. Plans made with them therefore use
// every kind of unit. Shared by tests/placement (CPU sessions) and tests/cuda (the GPU checks).
#pragma once

#include "placement/bandwidths.h"
#include "placement/machine_budget.h"
#include "placement/planner.h"

namespace deltafin::test {

inline placement::Bandwidths split_test_rates() {
  placement::Bandwidths b;
  b.disk_gbps = 2;
  b.ram_gbps = 20;
  b.cpu_bf16_gbps = 10;
  b.cpu_mxfp4_gbps = 8;
  b.cpu_gflops = 50;
  b.h2d_gbps = 9;
  b.hbm_gbps = 1000;
  b.gpu_tflops = 100;
  return b;
}

// Plan options for those models: 1 MiB of scratch per device instead of the real model's 1 GiB, so
// the budgets the tests sweep are the tiny model's own.
inline placement::PlanOptions split_test_plan_options(int context_tokens) {
  placement::PlanOptions o;
  o.ram_scratch_bytes = 1 << 20;
  o.gpu_scratch_bytes = 1 << 20;
  o.context_tokens = context_tokens;
  return o;
}

// A machine that holds everything: 1 TiB of RAM and one GPU with 1 TiB (the starting point of the
// budget sweeps, whose plan gives the minimums).
inline placement::MachineBudget roomy_one_gpu_machine() {
  placement::MachineBudget b;
  b.ram_budget = 1ull << 40;
  b.gpus.push_back(placement::GpuBudget{"GPU 0", 1ull << 40, 0});
  return b;
}

}  // namespace deltafin::test
