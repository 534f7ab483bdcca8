#include "drafts/dspark_rope.h"

#include <algorithm>
#include <cmath>

namespace deltafin {

namespace {
double yarn_mscale(double factor, double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; }
}  // namespace

DSparkRope::DSparkRope(const YarnParams& p, int dim) : p_(p), dim_(dim), inv_freq_(dim / 2) {
  const double d = dim;
  double low = 0, high = 0;
  if (p.yarn) {
    auto corr = [&](double rot) { return d * std::log(p.original_max / (rot * 2 * M_PI)) / (2 * std::log(p.theta)); };
    low = std::max(std::floor(corr(p.beta_fast)), 0.0);
    high = std::min(std::ceil(corr(p.beta_slow)), d - 1);
    if (low == high) high += 0.001;  // avoid a zero-width ramp
    cs_scale_ = yarn_mscale(p.factor, p.mscale) / yarn_mscale(p.factor, p.mscale_all_dim);
  }
  for (int i = 0; i < dim / 2; ++i) {
    const double f = std::pow(p.theta, -2.0 * i / d);
    if (!p.yarn) {
      inv_freq_[i] = f;
      continue;
    }
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    inv_freq_[i] = (f / p.factor) * ramp + f * (1 - ramp);
  }
}

double DSparkRope::softmax_scale(int qk_head) const {
  double s = 1.0 / std::sqrt(double(qk_head));
  if (p_.yarn && p_.mscale_all_dim != 0) {
    const double m = yarn_mscale(p_.factor, p_.mscale_all_dim);
    s *= m * m;
  }
  return s;
}

void DSparkRope::rotate(float* x, int64_t pos) const {
  for (int i = 0; i < dim_ / 2; ++i) {
    const double a = double(pos) * inv_freq_[i];
    const float c = static_cast<float>(std::cos(a) * cs_scale_), s = static_cast<float>(std::sin(a) * cs_scale_);
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c - x1 * s;
    x[2 * i + 1] = x0 * s + x1 * c;
  }
}

}  // namespace deltafin
