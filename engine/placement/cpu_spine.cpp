#include "placement/cpu_spine.h"

namespace deltafin::placement {

SpinePlacement cpu_spine_placement(const Plan& p) {
  SpinePlacement s;
  const bool streams = p.streamed_units() > 0;
  auto home = [&](Home h) {
    if (h == Home::Disk) return SpineHome::Streamed;
    if (h == Home::Ram && streams) return SpineHome::Owned;
    return SpineHome::Mapped;
  };
  for (const auto& u : p.units) {
    if (u.unit == kLmHeadUnit) s.lm_head = home(u.home);
    else if (u.unit >= 0) s.layers.push_back(home(u.home));
  }
  return s;
}

}  // namespace deltafin::placement
