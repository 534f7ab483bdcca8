// The expert-kernel versions that choose_expert_kernel reaches on no GPU: measured, kept to measure
// against (deltafin-cuda-bench) and to check (deltafin-cuda-check). "The product's" versions below are
// the policy's (mxfp4_experts.cu, in this library too since the K3 forward's experts went fp64).
// docs/history/EXPERT-KERNELS.md has what each tried and why it lost. Same task scheme as the
// product's (expert_tasks.cuh); expert_kernels_lab.h offers them by name, the product's versions
// first, and runs them through ExpertMlp::use_variant.
#include <string>
#include <utility>
#include <vector>

#include "cuda/lab/expert_tasks.cuh"
#include "cuda/lab/expert_variant.h"
#include "cuda/lab/expert_kernels_lab.h"

namespace deltafin::cuda {
namespace {

#include "cuda/lab/expert_tasks_lab.cuh"
#include "cuda/lab/mxfp4_experts_mma.cuh"
#include "cuda/lab/mxfp4_experts_mma_stages.cuh"
#include "cuda/lab/mxfp4_experts_imma.cuh"
#include "cuda/lab/mxfp4_experts_ws.cuh"
#include "cuda/lab/mxfp4_experts_direct_lab.cuh"

// A lab version as the registry described it before the product's policy was written out.
// RO/RB: gate-up / down rows per warp pass; NA: assignments per pass over the weights; U: chunk
// iterations unrolled; last template argument of expert_mlp_kernel: blocks per SM the registers are
// capped for.
struct Spec {
  const char* name;
  KernelFn fn;
  int tile_a, tile_b;
  int nk1 = 0, nk2 = 0;  // exact versions: the chunks per lane they are built for (0: any shape)
  int order = 0;         // versions with the same order compute the same bits
  int mma =
      0;  // tensor-core version (mxfp4_experts_mma.cuh; 2: float-scale buffers, 3: small stages): 16-byte alignment
  int imma = 0;  // integer tensor-core version (mxfp4_experts_imma.cuh): activation vectors per pass; 16-byte alignment
  int ring = 0;  // imma versions: ring stages per warp (0: register prefetch)
  int ws = 0;    // warp-specialised version (mxfp4_experts_ws.cuh): ring stages per block; imma = vectors per pass
  int rs = 0, nq = 0,
      nr = 0;         // warp-specialised versions: row sets per task, column splits, row sets per warp (ws::Shape)
  int nv = 1;         // exact FFMA versions: activation vectors per pass over the weights
  int shared = 0;     // > 0: replaces the default when experts are shared by at least shared/100 rows each
                      // on average (and it shares the default's order)
  int frag = 0;       // reads the packed weights in fragment order (mxfp4_experts_direct.cuh), this many 16-row
                      // tiles per warp; 16-byte alignment
  int meta = 0;       // copies the routing tables into shared memory (MetaTables): calls whose tables do not
                      // fit run the first version of the same order and layout without it
  int hmax = 0;       // gate/up tasks record max |h| per assignment for the down tasks' staging (Params::hmax)
  int lanes = 0;      // fragment-order versions: activation-fragment lanes per 32-column block (0: 24)
  int fuse = 0;       // no combine tasks: down tasks combine the rows they complete (finish_down_fused); needs meta
  int few = 0;        // > 0: replaces the default for calls of at most `few` rows (and it shares the default's
                      // order); a `shared` version that applies comes first
  int stab = 0;       // fragment-order versions: per-warp scale tables in shared memory (direct::put_scales)
  int few_share = 0;  // a `few` version: it also comes before the `shared` versions while the call's rows
                      // per expert stay below few_share/100 (0: the `shared` versions always come first)
};

const Spec kLab[] = {
    {"v9 k3-exact RO=2 RB=4 tiles 64/64", expert_mlp_lab_kernel<2, 4, 1, 1, 2, 2, 7, 6>, 64, 64, 7, 6},
    {"v62 k3-exact RO=1 RB=2 tiles 64/64 2 vectors per pass 3 blocks/SM", expert_mlp_lab_kernel<1, 2, 2, 1, 3, 2, 7, 6>,
     64, 64, 7, 6, 0, 0, 0, 0, 0, 0, 0, 0, 2},
    {"v68 k3-exact RO=1 RB=2 tiles 64/64 4 vectors per pass one decode 3 blocks/SM",
     expert_mlp_lab_kernel<1, 2, 4, 1, 3, 3, 7, 6>, 64, 64, 7, 6, 0, 0, 0, 0, 0, 0, 0, 0, 4},
    {"v11 k3-exact RO=2 RB=4 tiles 64/64 3 blocks/SM", expert_mlp_lab_kernel<2, 4, 1, 1, 3, 2, 7, 6>, 64, 64, 7, 6},
    {"v60 k3-exact RO=2 RB=4 tiles 64/64 2 vectors per pass", expert_mlp_lab_kernel<2, 4, 2, 1, 2, 2, 7, 6>, 64, 64, 7,
     6, 0, 0, 0, 0, 0, 0, 0, 0, 2},
    {"v61 k3-exact RO=1 RB=2 tiles 64/64 4 vectors per pass", expert_mlp_lab_kernel<1, 2, 4, 1, 2, 2, 7, 6>, 64, 64, 7,
     6, 0, 0, 0, 0, 0, 0, 0, 0, 4},
    {"v63 k3-exact RO=1 RB=2 tiles 64/64 2 vectors per pass", expert_mlp_lab_kernel<1, 2, 2, 1, 2, 2, 7, 6>, 64, 64, 7,
     6, 0, 0, 0, 0, 0, 0, 0, 0, 2},
    {"v39 imma ring 4 stages tiles 64/128", expert_mlp_imma_kernel<1, 2, 3, 4>, imma::kTileA, 128, 0, 0, 2, 0, 1, 4},
    {"v38 imma tiles 64/128 3 blocks/SM", expert_mlp_imma_kernel<1, 2, 3>, imma::kTileA, 128, 0, 0, 2, 0, 1},
    {"v41 imma 2 vectors per pass tiles 64/128", expert_mlp_imma_kernel<2, 2, 2>, imma::kTileA, 128, 0, 0, 2, 0, 2},
    {"v51 ws imma 2 vectors 3 stages tiles 16/32", expert_mlp_ws_kernel<2, 3, 4, 4>, 16, 32, 0, 0, 3, 0, 2, 0, 3, 4, 4,
     2},
    {"v55 ws imma 1 vector 3 stages tiles 16/32 16 warps", expert_mlp_ws_kernel<1, 3, 4, 8>, 16, 32, 0, 0, 4, 0, 1, 0,
     3, 4, 8, 2},
    {"v20 mma fp16x3 cp.async", expert_mlp_mma_kernel<mma16::Big, false, true>, mma16::kTileA, mma16::kTileB, 0, 0, 1,
     1},
    {"v22 mma fp16x3 cp.async 128-column stages 2 blocks/SM", expert_mlp_mma_kernel<mma16::Small, false, true, 2>,
     mma16::kTileA, mma16::kTileB, 0, 0, 1, 3},
    {"v21 mma fp16x3 cp.async float scales", expert_mlp_mma_kernel<mma16::Big, true, true>, mma16::kTileA,
     mma16::kTileB, 0, 0, 1, 2},
    {"v16 mma fp16x3 tiles 128/256", expert_mlp_mma_kernel<mma16::Big, false, false>, mma16::kTileA, mma16::kTileB, 0,
     0, 1, 1},
    {"v192 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up "
     "decode by multiply-add and mask combine in the down tasks 32 fragment lanes scale tables",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, false, 32, true, true, true>,
     direct::tile_a<1>(),
     direct::tile_b<1>(),
     0,
     0,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1,
     0,
     1,
     1,
     1,
     32,
     1,
     0,
     1},
    {"v193 traced (v192's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true, false, 32, true, true, true>,
     direct::tile_a<1>(),
     direct::tile_b<1>(),
     0,
     0,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1,
     0,
     1,
     1,
     1,
     32,
     1,
     0,
     1},
    {"v184 traced (v183's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true, false, 32, true, true>,
     direct::tile_a<1>(),
     direct::tile_b<1>(),
     0,
     0,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1,
     0,
     1,
     1,
     1,
     32,
     1},
    {"v143 traced (v138's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true, true, direct::kFragLanes, true, true>,
     direct::tile_a<1>(),
     direct::tile_b<1>(),
     0,
     0,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1,
     0,
     1,
     1,
     1,
     0,
     1},
    {"v126 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up "
     "decode on the FMA pipe",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1,
     0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1},
    {"v121 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0,
     0, 0, 0, 0, 0, 1, 0, 1, 1, 1},
    {"v131 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared memory maxima from gate/up "
     "decode on the FMA pipe 32 fragment lanes",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, true, true, true, 32>,
     direct::tile_a<1>(),
     direct::tile_b<1>(),
     0,
     0,
     1,
     0,
     0,
     0,
     0,
     0,
     0,
     0,
     1,
     0,
     1,
     1,
     1,
     32},
    {"v135 mma fp16x3 fragment order one tile per warp 3 chunks ahead decode by multiply-add and mask",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, false, false, true, direct::kFragLanes, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1},
    {"v130 mma fp16x3 fragment order one tile per warp 3 chunks ahead decode on the FMA pipe",
     expert_mlp_direct_kernel<3, 1, 2, 1, false, false, false, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1,
     0, 0, 0, 0, 0, 0, 0, 1, 0, 1},
    {"v96 mma fp16x3 fragment order one tile per warp 3 chunks ahead", expert_mlp_direct_kernel<3, 1, 2>,
     direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1},
    {"v136 mma fp16x3 fragment order one tile per warp 2 chunks ahead four vectors per pass decode by multiply-add and "
     "mask",
     expert_mlp_direct_kernel<2, 1, 2, 2, false, false, false, false, direct::kFragLanes, true>, direct::tile_a<1>(),
     direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1},
    {"v108 mma fp16x3 fragment order one tile per warp 2 chunks ahead four vectors per pass",
     expert_mlp_direct_kernel<2, 1, 2, 2>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0,
     1},
    {"v122 traced (v121's code with per-task times, set_expert_trace: diagnostics)",
     expert_mlp_direct_kernel<3, 1, 2, 1, true, true, true>, direct::tile_a<1>(), direct::tile_b<1>(), 0, 0, 1, 0, 0, 0,
     0, 0, 0, 0, 1, 0, 1, 1, 1},
    {"v91 mma fp16x3 fragment order 3 chunks ahead", expert_mlp_direct_kernel<3, 2, 2>, direct::tile_a<2>(),
     direct::tile_b<2>(), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2},
    {"v12 k3-exact RO=1 RB=2 tiles 64/64 4 blocks/SM", expert_mlp_lab_kernel<1, 2, 1, 1, 4, 2, 7, 6>, 64, 64, 7, 6},
    {"v2 RO=4 RB=8 tiles 32/32", expert_mlp_lab_kernel<4, 8, 1, 1, 2, 0>, 32, 32},
};
constexpr int kLabCount = sizeof(kLab) / sizeof(kLab[0]);

size_t smem_bytes(const Spec& v, int latent, int inter) {
  if (v.frag)
    return direct::smem_bytes(latent, inter, v.nv > 2 ? 2 : 1, v.lanes ? v.lanes : direct::kFragLanes, v.stab != 0);
  if (v.mma == 3) return mma16::smem_bytes<mma16::Small>(latent, inter, false);
  if (v.mma) return mma16::smem_bytes<mma16::Big>(latent, inter, v.mma == 2);
  if (v.ws) return ws::smem_bytes(latent, inter, v.imma, v.ws, v.rs, v.nq);
  if (v.imma) return imma::smem_bytes(latent, inter, v.imma, v.ring);
  return v.nk1 ? static_cast<size_t>(v.nv) * std::max(latent, inter) * sizeof(float) : 0;
}

bool fits(const Spec& v, int latent, int inter, const ExpertDevice& dl) {
  if (v.frag)
    return dl.cc_major >= 8 && (v.frag == 1 ? direct::fits<1>(latent, inter) : direct::fits<2>(latent, inter)) &&
           smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.ws) return dl.cc_major >= 9 && ws::fits(latent, inter, v.rs) && smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.imma)
    return dl.cc_major >= 8 && imma::fits(latent, inter, v.tile_b) && smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.mma == 3)
    return dl.cc_major >= 9 && mma16::fits<mma16::Small>(latent, inter, false) &&
           smem_bytes(v, latent, inter) <= dl.smem_optin;
  if (v.mma)
    return dl.cc_major >= 9 && mma16::fits<mma16::Big>(latent, inter, v.mma == 2) &&
           smem_bytes(v, latent, inter) <= dl.smem_optin;
  return v.nk1 == 0 || (latent == v.nk1 * 512 && inter == v.nk2 * 512);
}

template <int I>
size_t lab_smem(int latent, int inter) {
  return smem_bytes(kLab[I], latent, inter);
}
template <int I>
bool lab_fits(int latent, int inter, const ExpertDevice& d) {
  return fits(kLab[I], latent, inter, d);
}

// ExpertVariant::launch of the warp-specialised versions: one block per resident slot, each taking
// one chunk of each phase (three tickets per block) and then the combine tasks.
int launch_ws_kernel(const void* fn, unsigned, unsigned cap, int threads, size_t smem, void* stream, const void* params,
                     unsigned* tickets) {
  Params P;
  std::memcpy(&P, params, sizeof P);
  *tickets = 3 * cap + P.nC;
  return static_cast<int>(::deltafin::cuda::launch(reinterpret_cast<KernelFn>(const_cast<void*>(fn)), cap, threads,
                                                   smem, static_cast<cudaStream_t>(stream), P));
}

template <int I>
ExpertVariant lab_variant() {
  const Spec& s = kLab[I];
  ExpertVariant v;
  v.name = s.name;
  v.fn = reinterpret_cast<const void*>(s.fn);
  v.launch = s.ws ? launch_ws_kernel : launch_expert_kernel;
  v.smem = lab_smem<I>;
  v.fits = lab_fits<I>;
  v.tile_a = s.tile_a;
  v.tile_b = s.tile_b;
  v.order = s.order;
  v.fragments = s.frag != 0;
  v.aligned16 = s.mma || s.imma || s.frag;
  v.tables_in_shared = s.meta != 0;
  v.hmax = s.hmax != 0;
  v.fused_combine = s.fuse != 0;
  v.ticket_per_task = s.ws == 0;
  v.threads = s.ws ? ws::threads(s.rs, s.nq, s.nr) : kThreads;
  return v;
}

template <size_t... I>
std::vector<ExpertVariant> lab_variants(std::index_sequence<I...>) {
  return {lab_variant<static_cast<int>(I)>()...};
}

}  // namespace

void set_expert_trace(unsigned long long* dev_records) {
  DELTAFIN_CUDA_CHECK(cudaMemcpyToSymbol(g_expert_trace, &dev_records, sizeof dev_records));
}

namespace {

// Every version, the product's (by ExpertKernel) then the lab's.
const std::vector<ExpertVariant>& all_versions() {
  static const std::vector<ExpertVariant> all = [] {
    std::vector<ExpertVariant> v;
    for (int k = 0; k < kExpertKernels; ++k) v.push_back(expert_variant(static_cast<ExpertKernel>(k)));
    for (const ExpertVariant& l : lab_variants(std::make_index_sequence<kLabCount>())) v.push_back(l);
    return v;
  }();
  return all;
}

const ExpertVariant* find_version(const std::string& name) {
  for (const ExpertVariant& v : all_versions())
    if (name == v.name) return &v;
  return nullptr;
}

}  // namespace

std::vector<std::string> expert_versions(const ExpertMlp& m) {
  const ExpertDevice d = current_expert_device();
  std::vector<std::string> out;
  for (const ExpertVariant& v : all_versions())
    if (v.fits(m.latent(), m.inter(), d)) out.push_back(v.name);
  return out;
}

void select_expert_version(ExpertMlp& m, const std::string& name) {
  const ExpertVariant* v = find_version(name);
  if (!v || !v->fits(m.latent(), m.inter(), current_expert_device()))
    throw CudaError("select_expert_version: no kernel version named '" + name + "' fits these shapes");
  m.use_variant(v);
}

int expert_reduction_order(const std::string& name) {
  const ExpertVariant* v = find_version(name);
  if (!v) throw CudaError("expert_reduction_order: no kernel version named '" + name + "'");
  return v->order;
}

}  // namespace deltafin::cuda
