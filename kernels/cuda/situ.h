#pragma once
// K3's SiTU GLU constants, the one definition the CUDA kernels use: SiTU(g, u) = beta tanh(g / beta) sigmoid(g) *
// lbeta tanh(u / lbeta) with K3's activation_situ_beta 4.0 and activation_situ_linear_beta 25.0 (K3-SPEC), compiled
// into the kernels; a config with other betas is refused (situ_config_error; docs/CUDA.md "The forward"). Plain
// C++: the host checks and the tests use it without a GPU.
#include <cstdio>
#include <string>

namespace deltafin::cuda {

constexpr float kSituBeta = 4.0f;
constexpr float kSituLinearBeta = 25.0f;

// Empty when a config's betas are the ones the CUDA kernels were compiled with; otherwise why the
// CUDA forward cannot run that model.
inline std::string situ_config_error(float beta, float linear_beta) {
  if (beta == kSituBeta && linear_beta == kSituLinearBeta) return {};
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "the config's SiTU betas (activation_situ_beta %.9g, activation_situ_linear_beta %.9g) differ from "
                "the ones the CUDA expert kernels were compiled with (%.9g, %.9g)",
                beta, linear_beta, kSituBeta, kSituLinearBeta);
  return buf;
}

}  // namespace deltafin::cuda
