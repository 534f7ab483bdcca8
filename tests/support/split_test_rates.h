// Machine rates for the split and placement tests on tiny models (k3-tiny, the synthesized test
// models): the CPU streams weights a little faster than PCIe, so a unit in RAM decodes on the CPU;
// its matmul rate is low, so prefill passes copy it to the GPU. Plans made with them therefore use
// every kind of unit. Shared by tests/placement (CPU sessions) and tests/cuda (the GPU checks).
#pragma once

#include "placement/bandwidths.h"

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

}  // namespace deltafin::test
