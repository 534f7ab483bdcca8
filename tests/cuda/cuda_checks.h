#pragma once
// Comparisons of every CUDA kernel with the CPU reference on fresh random inputs, and bit-exact
// batch-invariance checks (row p alone vs inside T = 2, 4, 8 passes). No Qt here: the Qt test and
// the standalone deltafin-cuda-check (for GPU machines without Qt) both run these.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace deltafin::cuda::check {

struct Result {
  std::string name;
  bool ok = false;
  std::string detail;  // measured errors and bounds, or what differed
  // The table's columns (print_table): the op and its shape, and the worst error against the CPU
  // reference: max |gpu - cpu| and that over max |cpu| (normwise). NaN: a bit-for-bit or structural
  // check (detail says what was compared).
  std::string op, shape;
  double max_abs = NAN, max_rel = NAN;

  Result() = default;
  Result(std::string name_, bool ok_, std::string detail_, std::string op_ = {}, std::string shape_ = {},
         double max_abs_ = NAN, double max_rel_ = NAN)
      : name(std::move(name_)),
        ok(ok_),
        detail(std::move(detail_)),
        op(std::move(op_)),
        shape(std::move(shape_)),
        max_abs(max_abs_),
        max_rel(max_rel_) {}
};

// max |gpu - ref| and max |gpu - ref| / max |ref| over n elements; a NaN or infinity on either side
// makes both infinite (so a poisoned, unwritten output fails).
struct Errors {
  double max_abs = 0, max_rel = 0;
};
Errors errors(const float* gpu, const double* ref, size_t n);
Errors errors(const float* gpu, const float* ref, size_t n);
Errors errors(const double* gpu, const double* ref, size_t n);  // the K3 forward's fp64 ops

// Prints the results as one table, a row per check: op, shape, max abs, max rel, PASS/FAIL, what was
// checked and its detail (llama.cpp's test-backend-ops is the model). Returns the number that failed.
int print_table(const std::vector<Result>& results);

// n random BF16 values (normal, standard deviation sd) as bit patterns.
std::vector<uint16_t> rand_bf16(std::mt19937_64& rng, size_t n, float sd);

std::vector<Result> bf16_gemm(uint64_t seed);
std::vector<Result> rmsnorm(uint64_t seed);
// Every op of kernels/cuda/k3 (the K3 forward's own: router, SiTU, KDA, MLA, AttnRes, elementwise)
// against float64 CPU references written from the spec (cuda_k3_op_checks.cpp).
std::vector<Result> k3_ops(uint64_t seed);
// Small shapes, every kernel variant; with k3_shapes also K3's 3584/3072 experts (slower reference).
std::vector<Result> expert_mlp(uint64_t seed, bool k3_shapes);

}  // namespace deltafin::cuda::check
