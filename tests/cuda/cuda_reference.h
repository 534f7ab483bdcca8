#pragma once
// CPU references for the CUDA kernels: the scalar kernels of kernels/cpu for every matrix product,
// and plain sequential code for the rest, written from K3-SPEC.md section 3.
#include <cstdint>
#include <vector>

namespace deltafin::cuda::ref {

// One MXFP4 expert in host memory, laid out as in the checkpoint.
struct HostExpert {
  std::vector<uint8_t> gate_packed, gate_scale, up_packed, up_scale, down_packed, down_scale;
};

float situ(float g, float u);
void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* y);
// y[latent] for one row: sum over slots, in order, of weight * down(SiTU(gate z, up z)).
void expert_mlp_row(const std::vector<const HostExpert*>& experts, const float* weights, const float* z, int latent,
                    int inter, float* y);

}  // namespace deltafin::cuda::ref
