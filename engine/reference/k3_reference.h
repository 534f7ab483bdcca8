#pragma once
// The float64 truth for a K3-family checkpoint: the forward of K3-SPEC.md section 3 in plain
// loops, every value a double, written from the spec and sharing no arithmetic with the fast path
// (runtime/, kernels/). It reads the same checkpoint through the same loaders (K3Model: config,
// bound spine tensors, the expert source), so a difference between the two is arithmetic alone.
// Slow by design (one token at a time, no threads, no SIMD): tests and `deltafin logits
// --reference` use it to measure how far the engine is from exact.
#include <cstdint>
#include <span>
#include <vector>

namespace deltafin {

class K3Model;

namespace reference {

// One conversation in float64: tokens are fed one at a time (the spec's math is causal, so this
// is the same function as a whole-sequence forward). Its state (KDA recurrent and conv states,
// MLA keys and values expanded per head) is all double.
class K3Reference {
 public:
  explicit K3Reference(const K3Model& model);
  ~K3Reference();
  K3Reference(const K3Reference&) = delete;
  K3Reference& operator=(const K3Reference&) = delete;

  // Runs one token at the next position; returns its logits [vocab]. With `layer_out`, also
  // each layer's returned residual stream (spec section 3, step 5), [layers][hidden].
  std::vector<double> step(int32_t id, std::vector<std::vector<double>>* layer_out = nullptr);
  int64_t n_past() const;

 private:
  struct State;
  const K3Model& m_;
  State* st_;
};

// Every position's logits of `ids` from an empty context, [T][vocab]; with `layer_out`,
// [layer][T][hidden] (the layout of ForwardTrace::layers).
std::vector<double> forward(const K3Model& model, std::span<const int32_t> ids,
                            std::vector<std::vector<double>>* layer_out = nullptr);

// How far `x` is from the reference `ref` (n values): sqrt(sum (x - ref)^2 / sum ref^2).
double rel_l2(const float* x, const double* ref, size_t n);
double rel_l2(const double* x, const double* ref, size_t n);
// Index of the first maximum, and the gap between the two largest values.
int64_t argmax(const double* x, int64_t n);
double top2_margin(const double* x, int64_t n);

}  // namespace reference
}  // namespace deltafin
