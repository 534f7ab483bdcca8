#pragma once
#include <array>
#include <bit>
#include <cstdint>
#include <string>

// Matrix-times-rows kernels over weights exactly as stored. Every kernel computes
// Y[t][o] = sum_i W[o][i] * X[t][i] for o in [o0, o1) and every row t < T, and
// each row is reduced in the same order whatever T is (batch invariance): a
// row's result is bit-identical alone or inside a T-row pass.
// Accumulation is fp64: a BF16, F32 or MXFP4 weight times an fp32 input is exact in fp64, so an
// output is its exact products summed in fp64 and rounded once to fp32 (with fp64 inputs and
// outputs, RowsArgs::xd / yd, each product is rounded to 53 bits and the sum is not rounded to fp32) (the fp32 sums
// they replace drifted measurably from the float64 truth on deep models: docs/ENGINE.md, "Exactness").
namespace deltafin::kernels {

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

struct RowsArgs {
  const void* w;         // weights, row-major [rows][in], possibly unaligned
  const uint8_t* scale;  // MXFP4 only: E8M0 scales [rows][in/32]
  int64_t in;            // input width (MXFP4: multiple of 32)
  int64_t o0, o1;        // output rows to produce
  const float* x;        // inputs [T][ldx]
  int64_t ldx;
  int T;
  float* y;  // outputs [T][ldy], column o written at y[t*ldy + o]
  int64_t ldy;
  // fp64 activations (the K3 forward's): when set they replace x and y, same strides. An fp64 input
  // times a weight is rounded once in fp64 (53 bits); the output is the fp64 sum, not rounded to fp32.
  const double* xd = nullptr;
  double* yd = nullptr;
};

struct KernelTable {
  Isa isa;
  const char* name;
  void (*bf16_rows)(const RowsArgs&);   // w: uint16 bf16 bits
  void (*f32_rows)(const RowsArgs&);    // w: float
  void (*mxfp4_rows)(const RowsArgs&);  // w: packed E2M1 pairs (low nibble = even column)
  // Attention over cached positions, with the plain loops' bits (fp32 x fp32 products, exact in
  // fp64, added in fp64 in index order):
  // out[i * ldo + k] = sum over j < n, in order, of q[i * ldq + j] * (rows[k] + offset)[j], for nq
  // queries i and count positions k;
  void (*dot_rows)(const float* q, int64_t ldq, int nq, int64_t n, const float* const* rows, int64_t offset,
                   int64_t count, double* out, int64_t ldo);
  // y[j] += a * x[j] for j < n, in fp64 (the product rounded, then added: no fused multiply-add).
  void (*axpy)(double a, const float* x, int64_t n, double* y);
  // y[j] += a * x[j] with x as BF16 bits (x may be unaligned); the product is rounded once in fp64
  // (exact when a is an fp32 value).
  void (*axpy_bf16)(double a, const void* x, int64_t n, double* y);
  // dot_rows and axpy over fp64 queries and rows (each product rounded, then added in index order).
  void (*dot_rows64)(const double* q, int64_t ldq, int nq, int64_t n, const double* const* rows, int64_t offset,
                     int64_t count, double* out, int64_t ldo);
  void (*axpy64)(double a, const double* x, int64_t n, double* y);
};

const KernelTable& table_for(Isa isa);
bool isa_supported(Isa isa);
Isa best_isa();
// The table every caller uses: the best supported ISA, or DELTAFIN_CPU_KERNELS=scalar|avx2|avx512.
const KernelTable& active();
void set_active(Isa isa);  // throws std::runtime_error when the CPU lacks it
const char* isa_name(Isa isa);

// E2M1 code -> value and E8M0 byte -> 2^(s-127), exactly.
extern const float kE2M1[16];
float e8m0_to_float(uint8_t s);
// e8m0_to_float(s) / 2 for every byte, exactly: 2^(s-128) (s = 1: 2^-127, s = 0: 2^-128, both
// subnormal; s = 255 stays infinite).
inline constexpr std::array<float, 256> kHalfE8M0 = [] {
  std::array<float, 256> t{};
  for (int s = 0; s < 256; ++s) {
    const uint32_t bits = s == 255 ? 0x7F800000u : s >= 2 ? uint32_t(s - 1) << 23 : s == 1 ? 0x00400000u : 0x00200000u;
    t[s] = std::bit_cast<float>(bits);
  }
  return t;
}();

// The same as doubles: 2^(s-128), s = 255 infinite.
inline constexpr std::array<double, 256> kHalfE8M0d = [] {
  std::array<double, 256> t{};
  for (int s = 0; s < 256; ++s) t[s] = double(kHalfE8M0[s]);
  return t;
}();

namespace scalar {
void bf16_rows(const RowsArgs&);
void f32_rows(const RowsArgs&);
void mxfp4_rows(const RowsArgs&);
}  // namespace scalar
namespace avx2 {
void bf16_rows(const RowsArgs&);
void f32_rows(const RowsArgs&);
void mxfp4_rows(const RowsArgs&);
}  // namespace avx2
namespace avx512 {
void bf16_rows(const RowsArgs&);
void f32_rows(const RowsArgs&);
void mxfp4_rows(const RowsArgs&);
}  // namespace avx512
namespace scalar {
void dot_rows(const float* q, int64_t ldq, int nq, int64_t n, const float* const* rows, int64_t offset, int64_t count,
              double* out, int64_t ldo);
void axpy(double a, const float* x, int64_t n, double* y);
void axpy_bf16(double a, const void* x, int64_t n, double* y);
void dot_rows64(const double* q, int64_t ldq, int nq, int64_t n, const double* const* rows, int64_t offset,
                int64_t count, double* out, int64_t ldo);
void axpy64(double a, const double* x, int64_t n, double* y);
}  // namespace scalar
namespace avx2 {  // also the AVX-512 table's: these are bound by the order of their adds, not by width
void dot_rows(const float* q, int64_t ldq, int nq, int64_t n, const float* const* rows, int64_t offset, int64_t count,
              double* out, int64_t ldo);
void axpy(double a, const float* x, int64_t n, double* y);
void axpy_bf16(double a, const void* x, int64_t n, double* y);
void dot_rows64(const double* q, int64_t ldq, int nq, int64_t n, const double* const* rows, int64_t offset,
                int64_t count, double* out, int64_t ldo);
void axpy64(double a, const double* x, int64_t n, double* y);
}  // namespace avx2

}  // namespace deltafin::kernels
