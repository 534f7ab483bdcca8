#pragma once
// The lab's BF16 GEMM versions (lab/bf16_gemm_lab.cu): linked into deltafin-cuda-bench and the
// checker only.

namespace deltafin::cuda {

// Makes bf16_gemm_versions() and bf16_gemm_version() offer v1, v2, v3 and v5 as well. Idempotent.
void register_lab_bf16_gemm_versions();

}  // namespace deltafin::cuda
