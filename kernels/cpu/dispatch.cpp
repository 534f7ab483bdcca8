#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cpu/gemm.h"

namespace deltafin::kernels {

const float kE2M1[16] = {0.f, .5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f, -0.f, -.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f};

float e8m0_to_float(uint8_t s) {
  if (s == 0) return 0x1p-127f;  // the one subnormal scale
  uint32_t bits = static_cast<uint32_t>(s) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

static const KernelTable kTables[3] = {
    {Isa::Scalar, "scalar", scalar::bf16_rows, scalar::f32_rows, scalar::mxfp4_rows, scalar::dot_rows, scalar::axpy,
     scalar::axpy_bf16, scalar::dot_rows64, scalar::axpy64},
    {Isa::Avx2, "avx2", avx2::bf16_rows, avx2::f32_rows, avx2::mxfp4_rows, avx2::dot_rows, avx2::axpy, avx2::axpy_bf16,
     avx2::dot_rows64, avx2::axpy64},
    {Isa::Avx512, "avx512", avx512::bf16_rows, avx512::f32_rows, avx512::mxfp4_rows, avx2::dot_rows, avx2::axpy,
     avx2::axpy_bf16, avx2::dot_rows64, avx2::axpy64},
};

const KernelTable& table_for(Isa isa) { return kTables[static_cast<int>(isa)]; }
const char* isa_name(Isa isa) { return kTables[static_cast<int>(isa)].name; }

bool isa_supported(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Scalar:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
  }
  return false;
}

Isa best_isa() {
  if (isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (isa_supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Scalar;
}

static const KernelTable* g_active = nullptr;

void set_active(Isa isa) {
  if (!isa_supported(isa))
    throw std::runtime_error(std::string("this CPU does not support the ") + isa_name(isa) +
                             " kernels (unset DELTAFIN_CPU_KERNELS or choose scalar)");
  g_active = &table_for(isa);
}

const KernelTable& active() {
  if (!g_active) {
    Isa isa = best_isa();
    if (const char* env = std::getenv("DELTAFIN_CPU_KERNELS"); env && *env) {
      std::string v(env);
      if (v == "scalar") isa = Isa::Scalar;
      else if (v == "avx2") isa = Isa::Avx2;
      else if (v == "avx512") isa = Isa::Avx512;
      else throw std::runtime_error("DELTAFIN_CPU_KERNELS='" + v + "' is not one of scalar, avx2, avx512");
    }
    set_active(isa);
  }
  return *g_active;
}

}  // namespace deltafin::kernels
