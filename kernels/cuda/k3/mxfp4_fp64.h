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
// The kernels apply the scale to each 16-column half of a block (a lane's share) before adding it to
// the lane's running sum: a power of two times a normal double is exact, so the fma that adds it
// rounds once, as adding the unscaled half-block sum would.
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

// The same high words from byte planes, one byte-permute per code: the kernels split each 32-bit word of
// codes once into the magnitudes of its even and of its odd nibbles (bytes of mag << 3, bits 3..5) and
// their signs (bytes of s << 7), then build code n's high word with prmt: byte 3 the sign byte, byte 2
// the magnitude byte, bytes 1 and 0 the magnitude byte's sign replicated (its bit 7 is 0, so 0x00).
// Seven operations per eight codes plus one per code, where the shifts-and-masks form takes about four.
struct E2m1Planes {
  uint32_t mag_even, mag_odd, sign_even, sign_odd;
};
DELTAFIN_HOST_DEVICE constexpr E2m1Planes e2m1_planes(uint32_t w) {
  return {(w << 3) & 0x38383838u, (w >> 1) & 0x38383838u, (w << 4) & 0x80808080u, w & 0x80808080u};
}

// PTX prmt.b32 in its default mode: byte i of the result is byte (sel >> 4i) & 7 of {b, a} (a bytes
// 0..3, b bytes 4..7), or that byte's bit 7 replicated over the byte when bit 3 of the selector nibble
// is set. The host model is what tst_mxfp4_fp64 runs; the device executes the instruction.
DELTAFIN_HOST_DEVICE inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const uint64_t both = (uint64_t(b) << 32) | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nib = (sel >> (4 * i)) & 0xFu;
    uint32_t byte = uint32_t(both >> (8 * (nib & 7u))) & 0xFFu;
    if (nib & 8u) byte = byte & 0x80u ? 0xFFu : 0u;
    d |= byte << (8 * i);
  }
  return d;
#endif
}

// The selector for the code in byte i's nibbles (i = 0..3): sign byte i of b, magnitude byte i of a, zeros.
DELTAFIN_HOST_DEVICE constexpr uint32_t e2m1_selector(int i) {
  return (uint32_t(4 + i) << 12) | (uint32_t(i) << 8) | (uint32_t(8 + i) << 4) | uint32_t(8 + i);
}

// e2m1_high_word(w, n) from w's planes.
DELTAFIN_HOST_DEVICE inline uint32_t e2m1_high_word(const E2m1Planes& p, int n) {
  return n % 2 ? prmt(p.mag_odd, p.sign_odd, e2m1_selector(n / 2))
               : prmt(p.mag_even, p.sign_even, e2m1_selector(n / 2));
}

// The power of two a 32-column block's sum is multiplied by: its E8M0 scale 2^(s-127) times
// 2^(1022 - kMxStageExp). s = 255 (no number in E8M0) is left to the caller (infinity, as the CPU's
// table has it).
DELTAFIN_HOST_DEVICE constexpr int e8m0_block_exponent(uint32_t s) { return int(s) - 127 + 1022 - kMxStageExp; }

}  // namespace deltafin::cuda::k3

#undef DELTAFIN_HOST_DEVICE
