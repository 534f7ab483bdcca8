#include "cuda_reference.h"

#include <cmath>
#include <numeric>

#include "cpu/gemm.h"

namespace deltafin::cuda::ref {

float situ(float g, float u) {
  const float sig = 1.0f / (1.0f + std::exp(-g));
  return (4.0f * std::tanh(g * 0.25f) * sig) * (25.0f * std::tanh(u * 0.04f));
}

void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* y) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i] * inv * w[i]);
}

static void mx_rows(const std::vector<uint8_t>& packed, const std::vector<uint8_t>& scale, int64_t rows, int64_t in,
                    const float* x, float* y) {
  kernels::RowsArgs a{};
  a.w = packed.data();
  a.scale = scale.data();
  a.in = in;
  a.o0 = 0;
  a.o1 = rows;
  a.x = x;
  a.ldx = in;
  a.T = 1;
  a.y = y;
  a.ldy = rows;
  kernels::scalar::mxfp4_rows(a);
}

void expert_mlp_row(const std::vector<const HostExpert*>& experts, const float* weights, const float* z, int latent,
                    int inter, float* y) {
  std::vector<float> g(inter), u(inter), h(inter), d(latent);
  std::vector<float> acc(latent, 0.f);
  for (size_t j = 0; j < experts.size(); ++j) {
    const HostExpert& e = *experts[j];
    mx_rows(e.gate_packed, e.gate_scale, inter, latent, z, g.data());
    mx_rows(e.up_packed, e.up_scale, inter, latent, z, u.data());
    for (int i = 0; i < inter; ++i) h[i] = situ(g[i], u[i]);
    mx_rows(e.down_packed, e.down_scale, latent, inter, h.data(), d.data());
    for (int o = 0; o < latent; ++o) acc[o] += weights[j] * d[o];
  }
  for (int o = 0; o < latent; ++o) y[o] = acc[o];
}

}  // namespace deltafin::cuda::ref
