// The fp32 routed-expert MLP's policy versions and ExpertMlp (expert_mlp.h), the host side that runs them: the
// product's until the K3 forward's experts went fp64 (k3::routed_experts), the lab's since, so "product version"
// below names a version the policy chooses. The kernels' task scheme is expert_tasks.cuh; which version runs a call is
// choose_expert_kernel (expert_kernel_policy.h). Versions the policy never chooses are expert_kernels_lab.cu's (run
// through ExpertMlp::use_variant in deltafin-cuda-bench and the checker; how they were chosen:
// docs/history/EXPERT-KERNELS.md).
#include <map>
#include <optional>

#include "cuda/lab/expert_tasks.cuh"
#include "cuda/lab/expert_kernel_policy.h"
#include "cuda/lab/expert_variant.h"

namespace deltafin::cuda {
namespace {

#include "cuda/lab/mxfp4_experts_mma.cuh"
#include "cuda/lab/mxfp4_experts_direct.cuh"

template <ExpertKernel K>
size_t product_smem(int latent, int inter) {
  return expert_kernel_smem(K, latent, inter);
}
template <ExpertKernel K>
bool product_fits(int latent, int inter, const ExpertDevice& d) {
  return expert_kernel_fits(K, latent, inter, d);
}

// Product version K: v6 reads rows (64-row tiles, reduction order 0); the others fragment order
// (reduction order 1), each but v194 with the routing tables in shared memory and maxima from gate/up.
template <ExpertKernel K>
ExpertVariant product(const char* name, KernelFn fn, bool fused_combine = false) {
  constexpr bool frag = K != ExpertKernel::v6, meta = frag && K != ExpertKernel::v194;
  return {.name = name,
          .fn = reinterpret_cast<const void*>(fn),
          .launch = launch_expert_kernel,
          .smem = product_smem<K>,
          .fits = product_fits<K>,
          .tile_a = frag ? direct::tile_a<1>() : 64,
          .tile_b = frag ? direct::tile_b<1>() : 64,
          .order = frag ? 1 : 0,
          .fragments = frag,
          .aligned16 = frag,
          .tables_in_shared = meta,
          .hmax = meta,
          .fused_combine = fused_combine};
}

// The product versions, indexed by ExpertKernel. Template arguments: expert_mlp_kernel<rows per warp
// pass (gate/up, down), min blocks per SM>; expert_mlp_direct_kernel: see mxfp4_experts_direct.cuh.
const ExpertVariant kProduct[kExpertKernels] = {
    product<ExpertKernel::v6>("v6 streamed RO=4 RB=8 tiles 64/64", expert_mlp_kernel<4, 8, 2>),
    product<ExpertKernel::v134>(
        "v134 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared "
        "memory maxima from gate/up decode by multiply-add and mask",
        expert_mlp_direct_kernel<3, 1, true, true, true, direct::kFragLanes, false, false, false>),
    product<ExpertKernel::v212>("v212 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared "
                                "memory maxima from gate/up decode by multiply-add and mask combine in the down tasks "
                                "32 fragment lanes scale tables two groups per loop step",
                                expert_mlp_direct_kernel<3, 1, true, true, false, 32, true, true, true>, true),
    product<ExpertKernel::v183>("v183 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared "
                                "memory maxima from gate/up decode by multiply-add and mask combine in the down tasks "
                                "32 fragment lanes scales without a vote",
                                expert_mlp_direct_kernel<3, 1, true, true, false, 32, true, false, false>, true),
    product<ExpertKernel::v138>(
        "v138 mma fp16x3 fragment order one tile per warp 3 chunks ahead tables in shared "
        "memory maxima from gate/up decode by multiply-add and mask combine in the down tasks",
        expert_mlp_direct_kernel<3, 1, true, true, true, direct::kFragLanes, true, false, false>, true),
    product<ExpertKernel::v194>(
        "v194 mma fp16x3 fragment order one tile per warp 2 chunks ahead four vectors per pass "
        "decode by multiply-add and mask scale tables",
        expert_mlp_direct_kernel<2, 2, false, false, false, direct::kFragLanes, false, true, false>),
};

}  // namespace

const ExpertVariant& expert_variant(ExpertKernel k) { return kProduct[static_cast<int>(k)]; }

struct ExpertMlp::Impl {
  ExpertKernel default_kernel = ExpertKernel::v6;  // the layout's default
  // The version every call runs (DELTAFIN_CUDA_EXPERT_VERSION or use_variant); null: each call runs what
  // choose_expert_kernel says, the default or a version with its reduction order (the same bits).
  const ExpertVariant* selected = nullptr;
  const ExpertVariant& pick(const ExpertMlp& m, int T, double rows_per_expert, bool aligned16, bool tables_fit_shared) {
    if (selected) return *selected;
    const BlocksPerSm bps = [&](ExpertKernel k) { return blocks(expert_variant(k), m.latent_, m.inter_); };
    return expert_variant(choose_expert_kernel(m.latent_, m.inter_, m.layout_, limits, bps,
                                               ExpertCall{T, rows_per_expert, aligned16, tables_fit_shared}));
  }
  const ExpertVariant& current() const;      // the version named by variant()
  std::map<const void*, int> blocks_per_sm;  // per kernel, from the occupancy calculator
  // Blocks per SM of version v at these widths (asked once, after allowing its shared memory).
  int blocks(const ExpertVariant& v, int latent, int inter) {
    int& bps = blocks_per_sm[v.fn];
    if (!bps) {
      const size_t smem = v.smem(latent, inter);
      // Static shared memory (MetaTables) counts towards the 48 KB a launch may use without opting in.
      cudaFuncAttributes fa{};
      DELTAFIN_CUDA_CHECK(cudaFuncGetAttributes(&fa, v.fn));
      if (smem + fa.sharedSizeBytes > 48 * 1024)
        DELTAFIN_CUDA_CHECK(
            cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      DELTAFIN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, v.fn, v.threads, smem));
      if (bps < 1) bps = 1;
    }
    return bps;
  }
  int sms = 0;
  ExpertDevice limits;
  bool few_wave_grid = true;  // set_few_wave_grid
  int max_assign = 0;
  DeviceBuffer h, d, counters, tables, hmax;
  DeviceBuffer rowdone;  // fused-combine versions: [max_rows][latent / 16] counts, 0 between calls
  // A ring of table slots (pinned host copy + device copy each), so that a call never waits for
  // the previous call's upload: the host runs ahead of the GPU as with any other launch.
  static constexpr int kSlots = 8;
  void* staging = nullptr;  // kSlots x staging_bytes, pinned
  size_t staging_bytes = 0;
  cudaEvent_t staged[kSlots]{};
  int next_slot = 0;
  // Where the counters stand after the calls queued so far: run() never resets them between
  // calls (no memset before its launch); run_routed's table builder resets them on the device.
  bool counters_known = false;
  unsigned ticket_base = 0;
  std::vector<unsigned> doneA_base, doneB_base;  // [max_assign]
  DeviceBuffer zeros;                            // [max_assign] zero bases for run_routed
  // plan_routed's tables, waiting for run_planned.
  struct Plan {
    bool ready = false;
    int T = 0;
    const ExpertVariant* v = nullptr;
    int nG = 0;
    const char* dt = nullptr;
  };
  Plan plan;

  // Byte offsets of the routing tables for nG groups and A slots, in a staging slot (run) and in
  // the matching slot of `tables` alike.
  struct Layout {
    size_t exp, beg, list, sg, w, ab, bb, end;
  };
  static Layout layout(int nG, int A) {
    size_t off = 0;
    auto take = [&](size_t bytes) {
      off = (off + 15) & ~size_t(15);
      const size_t at = off;
      off += bytes;
      return at;
    };
    Layout L{};
    L.exp = take(nG * sizeof(MxExpert));
    L.beg = take((nG + 1) * sizeof(int));
    L.list = take(A * sizeof(int));
    L.sg = take(A * sizeof(int));
    L.w = take(A * sizeof(float));
    L.ab = take(nG * sizeof(unsigned));
    L.bb = take(nG * sizeof(unsigned));
    L.end = off;
    return L;
  }
  // What one launch adds to the counters: every block takes one ticket per task it runs plus the
  // one that ends its loop; every group's doneA / doneB count its gate/up / down tiles.
  struct Counts {
    unsigned tickets, a_tiles, b_tiles;
  };
  // The expert kernel over tables at dt (layout L) whose counters start at ticket_base and, per
  // group, at doneA_base / doneB_base.
  Counts launch(const ExpertMlp& m, const ExpertVariant* v, int nG, int T, const char* dt, const Layout& L,
                unsigned ticket_base, const unsigned* doneA_base, const unsigned* doneB_base, const float* dev_z,
                float* dev_y, cudaStream_t s);
};

namespace {

// Blocks for a call of `total` tasks on `sms` SMs that hold `bps` blocks each: a call of 2 to kFewWaves waves whose
// last wave is a quarter to three quarters full runs on the fewest blocks that keep its number of waves (the rule,
// its derivation and measurements: docs/CUDA.md "Routed experts"); other calls keep the full grid. The grid never
// changes a result. set_expert_grid (DELTAFIN_CUDA_EXPERT_GRID=n) caps it, for measuring.
std::atomic<unsigned> g_grid_cap{[] {
  const char* e = std::getenv("DELTAFIN_CUDA_EXPERT_GRID");
  return e ? static_cast<unsigned>(std::strtoul(e, nullptr, 10)) : 0u;
}()};

unsigned expert_grid(unsigned total, unsigned sms, unsigned bps, bool few_wave_grid) {
  const unsigned forced = g_grid_cap.load(std::memory_order_relaxed);
  const unsigned cap = sms * bps;
  if (forced) return std::min({total, cap, forced});
  if (total <= cap) return total;
  if (!few_wave_grid) return cap;
  const unsigned waves = (total + cap - 1) / cap;
  const unsigned last = total - (waves - 1) * cap;  // tasks in the last wave, 1..cap
  if (bps != 2 || waves > kFewWaves || 4 * last < cap || 4 * last > 3 * cap) return cap;
  const unsigned g = (total - cap + waves - 2) / (waves - 1);  // ceil((total - 2 sms) / (w - 1))
  return std::max(sms, std::min(cap, g));
}

ExpertDevice current_limits(int* sms) {
  int dev = 0;
  DELTAFIN_CUDA_CHECK(cudaGetDevice(&dev));
  ExpertDevice dl;
  if (sms) DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
  DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&dl.cc_major, cudaDevAttrComputeCapabilityMajor, dev));
  int optin = 0;
  DELTAFIN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  dl.smem_optin = static_cast<size_t>(optin);
  return dl;
}

// The product version DELTAFIN_CUDA_EXPERT_VERSION=vNN names (none: unset). Any other number is an
// error: the lab's versions run only in deltafin-cuda-bench and deltafin-cuda-check, selected by name.
std::optional<ExpertKernel> env_version() {
  const char* e = std::getenv("DELTAFIN_CUDA_EXPERT_VERSION");
  if (!e || !*e) return std::nullopt;
  for (int k = 0; k < kExpertKernels; ++k)
    if (std::string(e) == expert_kernel_id(static_cast<ExpertKernel>(k))) return static_cast<ExpertKernel>(k);
  throw CudaError(std::string("DELTAFIN_CUDA_EXPERT_VERSION=") + e +
                  ": not a product version (v6, v134, v212, v183, v138, v194; unset it for the default)");
}

}  // namespace

ExpertDevice current_expert_device() { return current_limits(nullptr); }

ExpertLayout ExpertMlp::preferred_layout(int latent, int inter) {
  if (const char* e = std::getenv("DELTAFIN_CUDA_EXPERT_LAYOUT"); e && std::string(e) == "rows")
    return ExpertLayout::rows;
  if (const std::optional<ExpertKernel> v = env_version())
    return expert_variant(*v).fragments ? ExpertLayout::fragments : ExpertLayout::rows;
  return preferred_expert_layout(latent, inter, current_limits(nullptr));
}

ExpertMlp::ExpertMlp(int latent, int inter, int top_k, int max_rows, ExpertLayout layout)
    : latent_(latent), inter_(inter), top_k_(top_k), max_rows_(max_rows), layout_(layout), impl_(new Impl) {
  try {
    if (latent <= 0 || inter <= 0 || latent % 32 || inter % 32)
      throw CudaError("ExpertMlp: latent (" + std::to_string(latent) + ") and intermediate (" + std::to_string(inter) +
                      ") widths must be positive multiples of 32");
    if (top_k <= 0 || max_rows <= 0) throw CudaError("ExpertMlp: top_k and max_rows must be positive");
    impl_->limits = current_limits(&impl_->sms);
    const bool frag = layout == ExpertLayout::fragments;
    const std::optional<ExpertKernel> def = default_expert_kernel(latent, inter, layout, impl_->limits);
    if (!def)
      throw CudaError("ExpertMlp: no " + std::string(frag ? "fragment-order" : "row-layout") + " version fits latent " +
                      std::to_string(latent) + " x intermediate " + std::to_string(inter) +
                      " on this device (store the experts in ExpertMlp::preferred_layout)");
    impl_->default_kernel = *def;
    // DELTAFIN_CUDA_EXPERT_VERSION=vNN (measurements): that version for every call.
    if (const std::optional<ExpertKernel> v = env_version()) {
      const ExpertVariant& ev = expert_variant(*v);
      if (!ev.fits(latent, inter, impl_->limits) || ev.fragments != frag)
        throw CudaError(
            "DELTAFIN_CUDA_EXPERT_VERSION=" + std::string(ev.name).substr(0, std::string(ev.name).find(' ')) +
            " does not fit these shapes on this device or does not read " + (frag ? "fragment-order" : "row-layout") +
            " experts (unset it for the default)");
      impl_->selected = &ev;
    }
    const int64_t A = static_cast<int64_t>(max_rows) * top_k;
    impl_->max_assign = static_cast<int>(A);
    impl_->h = DeviceBuffer(static_cast<size_t>(A) * inter * sizeof(float));
    impl_->d = DeviceBuffer(static_cast<size_t>(A) * latent * sizeof(float));
    impl_->counters = DeviceBuffer((1 + 2 * static_cast<size_t>(A)) * sizeof(unsigned));
    impl_->staging_bytes = (static_cast<size_t>(A) * sizeof(MxExpert) + (A + 1 + A + A) * sizeof(int) +
                            A * sizeof(float) + 2 * A * sizeof(unsigned) + 128 + 255) &
                           ~size_t(255);
    impl_->tables = DeviceBuffer(impl_->staging_bytes * Impl::kSlots);
    DELTAFIN_CUDA_CHECK(cudaMallocHost(&impl_->staging, impl_->staging_bytes * Impl::kSlots));
    for (cudaEvent_t& e : impl_->staged) DELTAFIN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    impl_->doneA_base.assign(static_cast<size_t>(A), 0u);
    impl_->doneB_base.assign(static_cast<size_t>(A), 0u);
    impl_->zeros = DeviceBuffer(static_cast<size_t>(A) * sizeof(unsigned));
    impl_->zeros.fill_byte(0);
    impl_->hmax = DeviceBuffer(static_cast<size_t>(A) * sizeof(unsigned));
    impl_->hmax.fill_byte(0);
    impl_->rowdone = DeviceBuffer(static_cast<size_t>(max_rows) * ((latent + 15) / 16) * sizeof(unsigned));
    impl_->rowdone.fill_byte(0);
  } catch (...) {
    for (cudaEvent_t e : impl_->staged)
      if (e) cudaEventDestroy(e);
    if (impl_->staging) cudaFreeHost(impl_->staging);
    delete impl_;
    throw;
  }
}

ExpertMlp::~ExpertMlp() {
  for (cudaEvent_t e : impl_->staged) {
    cudaEventSynchronize(e);
    cudaEventDestroy(e);
  }
  cudaFreeHost(impl_->staging);
  delete impl_;
}

const ExpertVariant& ExpertMlp::Impl::current() const { return selected ? *selected : expert_variant(default_kernel); }

const char* ExpertMlp::variant() const { return impl_->current().name; }

bool ExpertMlp::fragment_layout() const { return impl_->current().fragments; }

void ExpertMlp::set_few_wave_grid(bool on) { impl_->few_wave_grid = on; }

void ExpertMlp::use_variant(const ExpertVariant* v) {
  if (v && !v->fits(latent_, inter_, impl_->limits))
    throw CudaError(std::string("ExpertMlp::use_variant: ") + v->name + " does not fit these shapes on this device");
  impl_->selected = v;
}

void ExpertMlp::run(const std::vector<MxExpert>& experts, const int32_t* slot_expert, const float* slot_weight, int T,
                    const float* dev_z, float* dev_y, Stream stream) {
  if (T < 0 || T > max_rows_)
    throw CudaError("ExpertMlp::run: T = " + std::to_string(T) + " is outside 0.." + std::to_string(max_rows_));
  if (T == 0) return;
  const int K = top_k_;
  const int nA_assign = T * K;
  const int nG = static_cast<int>(experts.size());
  if (nG <= 0 || nG > nA_assign)
    throw CudaError("ExpertMlp::run: " + std::to_string(nG) + " distinct experts for " + std::to_string(nA_assign) +
                    " slots (pass only the experts the slots use)");
  for (int a = 0; a < nA_assign; ++a)
    if (slot_expert[a] < 0 || slot_expert[a] >= nG)
      throw CudaError("ExpertMlp::run: slot " + std::to_string(a) + " names expert " + std::to_string(slot_expert[a]) +
                      ", outside the " + std::to_string(nG) + " passed");
  for (const MxExpert& e : experts)
    if (!e.gate_packed || !e.gate_scale || !e.up_packed || !e.up_scale || !e.down_packed || !e.down_scale ||
        reinterpret_cast<uintptr_t>(e.gate_packed) % 8 || reinterpret_cast<uintptr_t>(e.up_packed) % 8 ||
        reinterpret_cast<uintptr_t>(e.down_packed) % 8)
      throw CudaError("ExpertMlp::run: every expert needs six device pointers, packed weights 8-byte aligned");
  // The tensor-core versions copy rows in 16-byte units; with other alignments a row-layout call of one selected by
  // name (the lab's tensor-core row versions) runs v6 (its bits differ, see ExpertVariant::order).
  bool aligned = true;
  for (const MxExpert& e : experts)
    for (const void* p : {e.gate_packed, e.gate_scale, e.up_packed, e.up_scale, e.down_packed, e.down_scale})
      aligned = aligned && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  const ExpertVariant* v =
      &impl_->pick(*this, T, static_cast<double>(nA_assign) / nG, aligned, meta_fits(nG, nA_assign));
  if (v->fragments) {
    // No fallback here: another layout's version would misread the bytes.
    for (const MxExpert& e : experts)
      for (const void* p : {e.gate_packed, e.gate_scale, e.up_packed, e.up_scale, e.down_packed, e.down_scale})
        if (reinterpret_cast<uintptr_t>(p) % 16)
          throw CudaError(std::string("ExpertMlp::run: ") + v->name +
                          " needs every expert tensor 16-byte aligned (repack_mx_fragments output)");
  } else if (v->aligned16 && layout_ == ExpertLayout::rows && !aligned) {
    v = &expert_variant(ExpertKernel::v6);
  }

  // This slot's staging buffer may still be feeding the copy of the call kSlots calls ago.
  const int slot = impl_->next_slot;
  impl_->next_slot = (slot + 1) % Impl::kSlots;
  DELTAFIN_CUDA_CHECK(cudaEventSynchronize(impl_->staged[slot]));
  char* st = static_cast<char*>(impl_->staging) + impl_->staging_bytes * slot;
  const Impl::Layout L = Impl::layout(nG, nA_assign);
  if (L.end > impl_->staging_bytes) throw CudaError("ExpertMlp::run: internal table overflow");
  std::memcpy(st + L.exp, experts.data(), nG * sizeof(MxExpert));
  int* beg = reinterpret_cast<int*>(st + L.beg);
  int* list = reinterpret_cast<int*>(st + L.list);
  std::memset(beg, 0, (nG + 1) * sizeof(int));
  for (int a = 0; a < nA_assign; ++a) ++beg[slot_expert[a] + 1];
  for (int g = 0; g < nG; ++g) beg[g + 1] += beg[g];
  {
    std::vector<int> fill(beg, beg + nG);
    for (int a = 0; a < nA_assign; ++a) list[fill[slot_expert[a]]++] = a;
  }
  std::memcpy(st + L.sg, slot_expert, nA_assign * sizeof(int));
  std::memcpy(st + L.w, slot_weight, nA_assign * sizeof(float));
  for (int g = 0; g < nG; ++g)
    if (beg[g + 1] == beg[g])
      throw CudaError("ExpertMlp::run: expert " + std::to_string(g) + " is passed but no slot uses it");

  const cudaStream_t s = as_stream(stream);
  if (!impl_->counters_known) {
    DELTAFIN_CUDA_CHECK(cudaMemsetAsync(impl_->counters.data(), 0, impl_->counters.size(), s));
    impl_->ticket_base = 0;
    std::fill(impl_->doneA_base.begin(), impl_->doneA_base.end(), 0u);
    std::fill(impl_->doneB_base.begin(), impl_->doneB_base.end(), 0u);
    impl_->counters_known = true;
  }
  std::memcpy(st + L.ab, impl_->doneA_base.data(), nG * sizeof(unsigned));
  std::memcpy(st + L.bb, impl_->doneB_base.data(), nG * sizeof(unsigned));
  char* dt = impl_->tables.as<char>() + impl_->staging_bytes * slot;
  DELTAFIN_CUDA_CHECK(cudaMemcpyAsync(dt, st, L.end, cudaMemcpyHostToDevice, s));
  DELTAFIN_CUDA_CHECK(cudaEventRecord(impl_->staged[slot], s));
  const Impl::Counts added =
      impl_->launch(*this, v, nG, T, dt, L, impl_->ticket_base, reinterpret_cast<const unsigned*>(dt + L.ab),
                    reinterpret_cast<const unsigned*>(dt + L.bb), dev_z, dev_y, s);
  impl_->ticket_base += added.tickets;
  for (int g = 0; g < nG; ++g) {
    impl_->doneA_base[g] += added.a_tiles;
    impl_->doneB_base[g] += added.b_tiles;
  }
}

void ExpertMlp::run_routed(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight,
                           int T, const float* dev_z, float* dev_y, Stream stream) {
  plan_routed(dev_table, n_experts, dev_idx, dev_weight, T, stream);
  run_planned(T, dev_z, dev_y, stream);
}

void ExpertMlp::plan_routed(const MxExpert* dev_table, int n_experts, const int32_t* dev_idx, const float* dev_weight,
                            int T, Stream stream) {
  if (T < 0 || T > max_rows_)
    throw CudaError("ExpertMlp::run_routed: T = " + std::to_string(T) + " is outside 0.." + std::to_string(max_rows_));
  impl_->plan = Impl::Plan{};
  if (T == 0) return;
  if (!dev_table || n_experts < top_k_)
    throw CudaError("ExpertMlp::run_routed: a table of " + std::to_string(n_experts) + " experts for top-" +
                    std::to_string(top_k_) + " routing");
  const int A = T * top_k_;
  // The distinct experts are known only on the device: plan for the most there can be. At T = 1
  // that is exactly top_k (a row's experts are distinct), so nothing is wasted there.
  const int nG = std::min(n_experts, A);
  // Expect what a uniformly random router gives (E (1 - (1 - k/E)^T) distinct experts); agreeing rows share more.
  const double expected_distinct = n_experts * (1.0 - std::pow(1.0 - static_cast<double>(top_k_) / n_experts, T));
  const ExpertVariant& v = impl_->pick(*this, T, A / std::max(1.0, expected_distinct), true, meta_fits(nG, A));
  const Impl::Layout L = Impl::layout(nG, A);
  if (L.end > impl_->staging_bytes) throw CudaError("ExpertMlp::run_routed: internal table overflow");
  // Its own table slot (the one run() would use next): a run() call queued before on this stream
  // is done with it by then, in stream order.
  const int slot = impl_->next_slot;
  impl_->next_slot = (slot + 1) % Impl::kSlots;
  char* dt = impl_->tables.as<char>() + impl_->staging_bytes * slot;
  unsigned* ctr = impl_->counters.as<unsigned>();
  RoutingTables out{reinterpret_cast<MxExpert*>(dt + L.exp),
                    reinterpret_cast<int*>(dt + L.beg),
                    reinterpret_cast<int*>(dt + L.list),
                    reinterpret_cast<int*>(dt + L.sg),
                    reinterpret_cast<float*>(dt + L.w),
                    ctr,
                    ctr + 1,
                    ctr + 1 + impl_->max_assign};
  // Versions whose tickets do not number tasks (the lab's warp-specialised ones) skip unused groups
  // themselves, so their ticket and counters start at 0.
  build_routing_tables(dev_table, n_experts, dev_idx, dev_weight, T, top_k_, nG,
                       v.ticket_per_task ? (inter_ + v.tile_a - 1) / v.tile_a : 0, v.aligned16 ? 16 : 8, out,
                       as_stream(stream));
  // The builder resets the counters: they start at 0 for run_planned, and run() must reset them again.
  impl_->counters_known = false;
  impl_->plan = Impl::Plan{true, T, &v, nG, dt};
}

void ExpertMlp::run_planned(int T, const float* dev_z, float* dev_y, Stream stream) {
  if (T == 0) return;
  const Impl::Plan p = impl_->plan;
  if (!p.ready || p.T != T)
    throw CudaError("ExpertMlp::run_planned: no plan_routed for " + std::to_string(T) + " rows before it");
  impl_->plan = Impl::Plan{};
  const unsigned* zeros = impl_->zeros.as<unsigned>();
  impl_->launch(*this, p.v, p.nG, T, p.dt, Impl::layout(p.nG, T * top_k_), 0u, zeros, zeros, dev_z, dev_y,
                as_stream(stream));
  impl_->counters_known = false;
}

ExpertMlp::Impl::Counts ExpertMlp::Impl::launch(const ExpertMlp& m, const ExpertVariant* vp, int nG, int T,
                                                const char* dt, const Layout& L, unsigned ticket_base,
                                                const unsigned* doneA_base, const unsigned* doneB_base,
                                                const float* dev_z, float* dev_y, cudaStream_t s) {
  // A version selected by name whose tables do not fit shared memory: the fragment-order version
  // without that copy (every such version is fragment-order, the same bits).
  if (vp->tables_in_shared && !meta_fits(nG, T * m.top_k_)) vp = &expert_variant(kTablesFallback);
  const ExpertVariant& v = *vp;
  Params P{};
  P.experts = reinterpret_cast<const MxExpert*>(dt + L.exp);
  P.grp_begin = reinterpret_cast<const int*>(dt + L.beg);
  P.assign_list = reinterpret_cast<const int*>(dt + L.list);
  P.slot_group = reinterpret_cast<const int*>(dt + L.sg);
  P.slot_weight = reinterpret_cast<const float*>(dt + L.w);
  P.z = dev_z;
  P.y = dev_y;
  P.h = h.as<float>();
  P.d = d.as<float>();
  unsigned* ctr = counters.as<unsigned>();
  P.ticket = ctr;
  P.doneA = ctr + 1;
  P.doneB = ctr + 1 + max_assign;
  P.ticket_base = ticket_base;
  P.doneA_base = doneA_base;
  P.doneB_base = doneB_base;
  P.nG = nG;
  P.T = T;
  P.K = m.top_k_;
  P.latent = m.latent_;
  P.inter = m.inter_;
  P.tile_a = v.tile_a;
  P.tile_b = v.tile_b;
  P.a_tiles = (m.inter_ + P.tile_a - 1) / P.tile_a;
  P.b_tiles = (m.latent_ + P.tile_b - 1) / P.tile_b;
  P.c_tiles = (m.latent_ + kTileC - 1) / kTileC;
  P.nA = static_cast<unsigned>(nG * P.a_tiles);
  P.nB = static_cast<unsigned>(nG * P.b_tiles);
  P.nC = v.fused_combine ? 0u : static_cast<unsigned>(T * P.c_tiles);
  P.rowdone = v.fused_combine ? rowdone.as<unsigned>() : nullptr;

  const size_t smem = v.smem(m.latent_, m.inter_);
  const int threads = v.threads;
  const int bps = blocks(v, m.latent_, m.inter_);
  const unsigned total = P.nA + P.nB + P.nC;
  const unsigned cap = static_cast<unsigned>(sms * bps);
  const unsigned grid = expert_grid(total, static_cast<unsigned>(sms), static_cast<unsigned>(bps), few_wave_grid);
  P.hmax = v.hmax ? hmax.as<unsigned>() : nullptr;
  unsigned tickets = 0;
  DELTAFIN_CUDA_CHECK(static_cast<cudaError_t>(v.launch(v.fn, grid, cap, threads, smem, s, &P, &tickets)));
  return Counts{tickets, static_cast<unsigned>(P.a_tiles), static_cast<unsigned>(P.b_tiles)};
}

void set_expert_grid(unsigned blocks) { g_grid_cap.store(blocks, std::memory_order_relaxed); }

void repack_mx_fragments(const void* packed, void* out, int rows, int cols, Stream stream) {
  if (rows <= 0 || cols <= 0 || rows % 16 || cols % 64)
    throw CudaError("repack_mx_fragments: " + std::to_string(rows) + " x " + std::to_string(cols) +
                    " codes; rows must be a multiple of 16 and columns of 64");
  if (!packed || !out || reinterpret_cast<uintptr_t>(packed) % 4 || reinterpret_cast<uintptr_t>(out) % 16)
    throw CudaError("repack_mx_fragments: the source must be 4-byte and the destination 16-byte aligned device memory");
  const size_t bytes = static_cast<size_t>(rows) * cols / 2;
  const char* a = static_cast<const char*>(packed);
  const char* b = static_cast<const char*>(out);
  if (a < b + bytes && b < a + bytes)
    throw CudaError("repack_mx_fragments: source and destination overlap (no in-place repack)");
  const int64_t n = static_cast<int64_t>(bytes / 16);
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 4096));
  direct::repack_kernel<<<blocks, 256, 0, as_stream(stream)>>>(static_cast<const uint32_t*>(packed),
                                                               static_cast<uint4*>(out), rows, cols);
  DELTAFIN_CUDA_LAUNCHED("repack_mx_fragments");
}

}  // namespace deltafin::cuda