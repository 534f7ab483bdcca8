#include "cuda/lab/expert_kernel_policy.h"

#include <algorithm>

#include "cuda/lab/expert_geometry.h"

namespace deltafin::cuda {

namespace {

namespace direct = geometry::direct;

}  // namespace

const char* expert_kernel_id(ExpertKernel k) {
  switch (k) {
    case ExpertKernel::v6:
      return "v6";
    case ExpertKernel::v134:
      return "v134";
    case ExpertKernel::v212:
      return "v212";
    case ExpertKernel::v183:
      return "v183";
    case ExpertKernel::v138:
      return "v138";
    case ExpertKernel::v194:
      return "v194";
  }
  return "?";
}

size_t expert_kernel_smem(ExpertKernel k, int latent, int inter) {
  switch (k) {
    case ExpertKernel::v6:
      return 0;
    // Fragment order: pairs of vectors per pass, fragment lanes, scale tables.
    case ExpertKernel::v134:
      return direct::smem_bytes(latent, inter, 1, direct::kFragLanes, false);
    case ExpertKernel::v212:
      return direct::smem_bytes(latent, inter, 1, 32, true);
    case ExpertKernel::v183:
      return direct::smem_bytes(latent, inter, 1, 32, false);
    case ExpertKernel::v138:
      return direct::smem_bytes(latent, inter, 1, direct::kFragLanes, false);
    case ExpertKernel::v194:
      return direct::smem_bytes(latent, inter, 2, direct::kFragLanes, true);
  }
  return 0;
}

bool expert_kernel_fits(ExpertKernel k, int latent, int inter, const ExpertDevice& d) {
  switch (k) {
    case ExpertKernel::v6:
      return true;
    default:  // fragment order, one 16-row tile per warp
      return d.cc_major >= 8 && direct::fits<1>(latent, inter) && expert_kernel_smem(k, latent, inter) <= d.smem_optin;
  }
}

ExpertLayout preferred_expert_layout(int latent, int inter, const ExpertDevice& d) {
  // v134 needs the least shared memory of the fragment-order versions.
  return expert_kernel_fits(ExpertKernel::v134, latent, inter, d) ? ExpertLayout::fragments : ExpertLayout::rows;
}

std::optional<ExpertKernel> default_expert_kernel(int latent, int inter, ExpertLayout layout, const ExpertDevice& d) {
  if (layout == ExpertLayout::fragments) {
    if (expert_kernel_fits(ExpertKernel::v134, latent, inter, d)) return ExpertKernel::v134;
    return std::nullopt;
  }
  return ExpertKernel::v6;  // any widths
}

ExpertKernel choose_expert_kernel(int latent, int inter, ExpertLayout layout, const ExpertDevice& d,
                                  const BlocksPerSm& blocks_per_sm, const ExpertCall& call) {
  const ExpertKernel base = default_expert_kernel(latent, inter, layout, d).value();
  const double rpe100 = call.rows_per_expert * 100;
  if (layout == ExpertLayout::rows) return base;  // v6 reads any alignment

  // Fragments: alternatives to v134 only where they fit and keep its blocks per SM (a block less
  // per SM costs more than they gain).
  auto keeps_blocks = [&](ExpertKernel k) {
    return expert_kernel_fits(k, latent, inter, d) && blocks_per_sm(k) >= blocks_per_sm(base);
  };
  // The version for calls of a few rows: the first that qualifies, with the most rows it serves and
  // the rows per expert below which it comes before v194.
  std::optional<ExpertKernel> few;
  int few_rows = 0;
  double few_below_rpe100 = 0;
  if (keeps_blocks(ExpertKernel::v212)) few = ExpertKernel::v212, few_rows = 8, few_below_rpe100 = 200;
  else if (keeps_blocks(ExpertKernel::v183)) few = ExpertKernel::v183, few_rows = 2;
  else if (keeps_blocks(ExpertKernel::v138)) few = ExpertKernel::v138, few_rows = 2;
  const bool shared_ok = keeps_blocks(ExpertKernel::v194);

  ExpertKernel k = base;
  if (few && call.rows <= few_rows && rpe100 < few_below_rpe100) k = *few;
  else if (shared_ok && rpe100 >= 120) k = ExpertKernel::v194;
  else if (few && call.rows <= few_rows) k = *few;
  // Every fragment-order version but v194 copies the routing tables into shared memory.
  if (!call.tables_fit_shared && k != ExpertKernel::v194) k = kTablesFallback;
  return k;
}

}  // namespace deltafin::cuda
