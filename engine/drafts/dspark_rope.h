#pragma once
#include <vector>

#include "drafts/dspark_config.h"

namespace deltafin {

// DeepSeek YaRN on DSpark's rope lane (K3-SPEC.md section 5): per pair i the
// frequency blends interpolated and original by a linear ramp between the
// beta_fast and beta_slow correction dims; adjacent pairs (2i, 2i+1) rotate.
class DSparkRope {
 public:
  DSparkRope(const YarnParams& p, int dim);
  const std::vector<double>& inv_freq() const { return inv_freq_; }
  double cos_sin_scale() const { return cs_scale_; }
  // Softmax scale of a query/key head of width qk_head.
  double softmax_scale(int qk_head) const;
  // Rotates x[0..dim) in place for absolute position `pos`.
  void rotate(float* x, int64_t pos) const;

 private:
  YarnParams p_;
  int dim_;
  std::vector<double> inv_freq_;
  double cs_scale_ = 1;
};

}  // namespace deltafin
