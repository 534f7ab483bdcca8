// The lab's fp64 routed-expert variants: the table's host side (names, what fits, workspace), the pass
// loop (the product's four launches) and the dispatch to the part that instantiates each variant's up
// and down kernels (experts64_lab_part<P>.cu).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "cuda/lab/experts64_lab.cuh"

namespace deltafin::cuda::lab {
namespace {

using experts64::kVariants;
namespace tiles = k3::experts64;

__global__ void __launch_bounds__(256)
    stage_kernel(const double* __restrict__ z, int rows, int Z, double* __restrict__ zs) {
  pdl_enter();
  tiles::stage_rows(z, rows, Z, zs);
}

__global__ void __launch_bounds__(256) combine_kernel(const double* __restrict__ d, const double* __restrict__ wt,
                                                      int rows, int k, int Z, double* __restrict__ y) {
  pdl_enter();
  tiles::combine_rows(d, wt, rows, k, Z, y);
}

int chunk_rows(const Experts64Params& p, int T, int k) { return std::max(1, std::min(T, p.pass / k)); }

// Blocks per pair group, as the product's, with the variant's warps and fill.
unsigned blocks_per_group(const Experts64Params& p, int groups, int pairs) {
  return tiles::blocks_per_group(p.warps, p.fill, groups, pairs);
}

}  // namespace

int experts64_lab_count() { return experts64::kCount; }

Experts64Params experts64_lab_params(int v) {
  if (v < 0 || v >= experts64::kCount) throw std::out_of_range("experts64_lab: no such variant");
  return kVariants[v];
}

std::string experts64_lab_name(int v) {
  const Experts64Params p = experts64_lab_params(v);
  char b[96];
  std::snprintf(b, sizeof b, "u%dd%da%dw%db%ds%dx%dc%dg%df%dn%dp%dh%d", p.ru, p.rd, p.ahead, p.warps, p.minb, p.sc,
                p.xm, p.dec, p.group, p.fill, p.pass, p.pf, p.hb);
  return b;
}

std::string experts64_lab_what(int v) {
  const Experts64Params p = experts64_lab_params(v), base = kVariants[0];
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  char b[96];
  if (p.ru != base.ru || p.rd != base.rd) {
    std::snprintf(b, sizeof b, "%d gate+up / %d down rows per warp", p.ru, p.rd);
    add(b);
  }
  if (p.ahead != base.ahead) {
    std::snprintf(b, sizeof b, "codes %d steps ahead", p.ahead);
    add(b);
  }
  if (p.warps != base.warps || p.minb != base.minb) {
    std::snprintf(b, sizeof b, "%d warps/block, regs for %d blocks/SM", p.warps, p.minb);
    add(b);
  }
  if (p.sc) add("scales as words + shuffles");
  if (p.xm) {
    std::snprintf(b, sizeof b, "activations in smem (groups <= %d)", p.xm);
    add(b);
  }
  if (p.dec == 1) add("decode by smem table");
  if (p.dec == 2) add("decode by shifts/masks");
  if (p.group != base.group) {
    std::snprintf(b, sizeof b, "groups of %d pairs", p.group);
    add(b);
  }
  if (p.fill != base.fill) {
    std::snprintf(b, sizeof b, "fill %d x SMs", p.fill);
    add(b);
  }
  if (p.pass != base.pass) {
    std::snprintf(b, sizeof b, "%d pairs per pass", p.pass);
    add(b);
  }
  if (p.pf) {
    std::snprintf(b, sizeof b, "L2 prefetch %d row group%s ahead", p.pf, p.pf > 1 ? "s" : "");
    add(b);
  }
  if (p.hb == 2) add("whole blocks per lane (other order)");
  return s.empty() ? "the product's shape (lab copy)" : s;
}

bool experts64_lab_keeps_order(int v) { return experts64_lab_params(v).hb == 1; }

bool experts64_lab_applies(int v, int latent, int inter) {
  const Experts64Params p = experts64_lab_params(v);
  if (latent % 32 || inter % 32) return false;
  if (p.sc && (latent % 512 || inter % 512)) return false;  // whole steps, 4-byte aligned scale rows
  return inter % p.ru == 0 && latent % p.rd == 0;
}

int64_t experts64_lab_scratch(int v, int T, int k, int latent, int inter) {
  const int64_t rows = chunk_rows(experts64_lab_params(v), std::max(1, T), std::max(1, k));
  return rows * latent + rows * k * (int64_t(inter) + latent);
}

void experts64_lab(int v, const MxExpert* table, const int32_t* slot, const double* w, int T, int k, int latent,
                   int inter, const double* z, double* scratch, double* y, cudaStream_t s) {
  if (T <= 0) return;
  const Experts64Params p = experts64_lab_params(v);
  if (!experts64_lab_applies(v, latent, inter) || k < 1)
    throw std::invalid_argument("experts64_lab: variant does not fit these shapes");
  experts64::Launcher f = nullptr;
  switch (v % experts64::kParts) {
    case 0:
      f = experts64::part0_launcher(v);
      break;
    case 1:
      f = experts64::part1_launcher(v);
      break;
    case 2:
      f = experts64::part2_launcher(v);
      break;
    default:
      f = experts64::part3_launcher(v);
      break;
  }
  const int rows = chunk_rows(p, T, k);
  double* zs = scratch;
  double* hs = zs + int64_t(rows) * latent;
  double* d = hs + int64_t(rows) * k * inter;
  for (int t0 = 0; t0 < T; t0 += rows) {
    const int n = std::min(rows, T - t0), P = n * k;
    DELTAFIN_CUDA_CHECK(launch(stage_kernel, dim3(k3::grid_1d(int64_t(n) * latent)), 256, 0, s,
                               z + int64_t(t0) * latent, n, latent, zs));
    const experts64::Args a{table,
                            slot + int64_t(t0) * k,
                            P,
                            k,
                            latent,
                            inter,
                            zs,
                            hs,
                            d,
                            dim3(blocks_per_group(p, inter / p.ru, P), unsigned(P)),
                            dim3(blocks_per_group(p, latent / p.rd, P), unsigned(P))};
    f(a, s);
    DELTAFIN_CUDA_CHECK(launch(combine_kernel, dim3(k3::grid_1d(int64_t(n) * latent)), 256, 0, s,
                               static_cast<const double*>(d), w + int64_t(t0) * k, n, k, latent,
                               y + int64_t(t0) * latent));
  }
}

}  // namespace deltafin::cuda::lab
