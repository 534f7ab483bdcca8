#pragma once
// How the fp64 routed-expert kernels (experts.cu) turn MXFP4 codes into doubles without a table.
// Plain C++ so that a CPU test (tests/kernels/tst_mxfp4_fp64.cpp) checks the arithmetic on every
// code in every build, GPU or not.
//
// An E2M1 code's three magnitude bits (e1 e0 m), placed as the two lowest exponent bits and the top
// mantissa bit of a double, are the code's value times 2^-1022 exactly: e >= 1 gives
// 2^(e - 1023) (1 + m/2) = 2^-1022 * 2^(e-1) (1 + m/2), and e = 0 lands on the subnormals 0 and
// 2^-1023 as E2M1's own subnormals 0 and 0.5 do. The sign goes to bit 63. The activations are
// staged times 2^kMxStageExp, so a product code x activation stays a normal double (for activations
// between about 2^-900 and 2^64) and every sum rounds exactly as the unscaled one would; a block's
// sum is then multiplied by 2^e8m0_block_exponent(s), which takes all the powers of two back out.
#include <cstdint>

#if defined(__CUDACC__)
#define DELTAFIN_HOST_DEVICE __host__ __device__
#else
#define DELTAFIN_HOST_DEVICE
#endif

namespace deltafin::cuda::k3 {

inline constexpr int kMxStageExp = 960;

// The high 32 bits of the double for the code in nibble n (0..7) of w (the low 32 bits are zero).
DELTAFIN_HOST_DEVICE constexpr uint32_t e2m1_high_word(uint32_t w, int n) {
  const int shift = 19 - 4 * n;  // magnitude bits 4n..4n+2 -> bits 19..21
  const uint32_t mag = (shift >= 0 ? w << shift : w >> -shift) & 0x00380000u;
  const uint32_t sign = (w << (28 - 4 * n)) & 0x80000000u;  // bit 4n+3 -> bit 31
  return mag | sign;
}

// The power of two a 32-column block's sum is multiplied by: its E8M0 scale 2^(s-127) times
// 2^(1022 - kMxStageExp). s = 255 (no number in E8M0) is left to the caller (infinity, as the CPU's
// table has it).
DELTAFIN_HOST_DEVICE constexpr int e8m0_block_exponent(uint32_t s) { return int(s) - 127 + 1022 - kMxStageExp; }

}  // namespace deltafin::cuda::k3

#undef DELTAFIN_HOST_DEVICE
