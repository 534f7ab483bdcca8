#include "placement/cpu_spine.h"

namespace deltafin::placement {

SpinePlacement cpu_spine_placement(const Plan& p) {
  SpinePlacement s;
  auto home = [&](Home h) {
    if (h == Home::Disk) return SpineHome::Streamed;
    if (h == Home::Ram) return SpineHome::Owned;
    return SpineHome::Mapped;
  };
  for (const auto& u : p.units) {
    if (u.unit == kLmHeadUnit) s.lm_head = home(u.home);
    else if (u.unit >= 0) s.layers.push_back(home(u.home));
  }
  return s;
}

void size_ram_tier(const Plan& p, StoreOptions& so) {
  so.ram_budget = p.experts.store_budget(p.bytes.expert_bytes);
  so.max_slots = p.experts.ram_slots;
}

}  // namespace deltafin::placement
