#include "cuda/k3_cuda_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "base/error.h"
#include "cuda/cuda_support.h"
#include "cuda/k3/k3_ops.h"
#include "cuda/pass_timeline.h"
#include "cuda/situ.h"
#include "cuda/vram_expert_cache.h"

namespace deltafin::cuda {

using k3::DevMat;

namespace {
struct DKda {
  DevMat qkv, g, o, fa, fb, b;  // qkv: q, k and v projections stacked (rows [3C])
  const float *qc = nullptr, *kc = nullptr, *vc = nullptr, *a_log = nullptr, *dt_bias = nullptr, *o_norm = nullptr;
};
struct DMla {
  DevMat q_a, q_b, kv_a, kv_b, o, g;
  const float *q_a_norm = nullptr, *kv_a_norm = nullptr;
};
struct DMlp {
  DevMat gate_up, down;  // gate_up: [gate; up] stacked, one launch
  int64_t inter = 0;
};
struct DMoe {
  DevMat router, latent_down, latent_up;
  const float *bias = nullptr, *latent_norm = nullptr;
  DMlp shared;
  bool has_shared = false;
};
struct DLayer {
  bool mla = false, moe = false;
  const float *input_norm = nullptr, *post_norm = nullptr, *attn_res = nullptr, *mlp_res = nullptr;
  DKda kda;
  DMla mla_w;
  DMlp dense;
  DMoe moe_w;
};
}  // namespace

// A unit the GPU computes but does not hold (placement::GpuCopy::Streamed): where each of its
// matrices lands in a stream buffer, its pinned host copy when its bytes are in RAM, and its
// device weights as seen in either buffer.
struct StreamPiece {
  size_t field = 0;  // the source Mat's offset inside LayerWeights (kHeadField: lm_head)
  uint64_t dst = 0, bytes = 0;
};
constexpr size_t kHeadField = ~size_t(0);
struct StreamUnit {
  bool used = false, from_disk = false;
  // RAM-homed units the host model owns (placement::shared_spine_copy): copied piece by piece from
  // the host's buffer, pinned in place, instead of from a second copy.
  bool from_host = false;
  HostRegistration host_pin;
  uint64_t bytes = 0, cursor = 0;
  PinnedBuffer pinned;  // other RAM-homed units: the bytes, laid out as in the stream buffer
  std::vector<StreamPiece> pieces;
  DLayer layer[2];
  DevMat head[2];
};

struct CudaK3Weights {
  DeviceArena arena;
  std::vector<StreamUnit> stream;  // [layers + 1] (the last: lm_head); used where streamed
  DeviceBuffer stream_buf[2];
  uint64_t stream_slot_bytes = 0;
  DevMat embed, lm_head;
  const float *final_norm = nullptr, *output_res = nullptr;
  std::vector<DLayer> layers;
  // Resident mode: per MoE layer, every expert's device pointers by id (empty otherwise), built
  // when the tier's epoch was tables_epoch.
  std::vector<DeviceBuffer> expert_tables;
  uint64_t tables_epoch = 0;
};

namespace {

// Walks every spine tensor twice: once to size the arena (and the stream units), once to copy into
// it. A streamed unit's matrices go to its pinned host copy, at the offsets they take in a stream
// buffer, with device pointers into stream buffer 0; units the GPU never computes are skipped.
struct Uploader {
  DeviceArena& arena;
  bool copy = false;
  bool skip = false;                   // the current unit is computed on the CPU only
  StreamUnit* unit = nullptr;          // the current unit streams
  const LayerWeights* base = nullptr;  // its host weights (field offsets)
  uint8_t* slot0 = nullptr;            // stream buffer 0
  DevMat mat(const Mat& m) {
    if (m.dtype != DType::BF16 && m.dtype != DType::F32) throw Error("CUDA K3: a spine matrix is neither BF16 nor F32");
    if (skip) return DevMat{nullptr, m.dtype == DType::BF16, m.rows, m.cols};
    if (unit) return streamed({&m});
    const size_t n = m.bytes();
    if (!copy) {
      arena.reserve(n);
      return {};
    }
    void* p = arena.take(n);
    check_cuda(cudaMemcpy(p, m.data, n, cudaMemcpyHostToDevice), "cudaMemcpy (weights)");
    return DevMat{p, m.dtype == DType::BF16, m.rows, m.cols};
  }
  const float* vec(const std::vector<float>& v) {
    if (v.empty() || skip) return nullptr;
    if (!copy) {
      arena.reserve(v.size() * 4);
      return nullptr;
    }
    auto* p = arena.take_n<float>(v.size());
    check_cuda(cudaMemcpy(p, v.data(), v.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy (weights)");
    return p;
  }
  DMlp mlp(const DenseMlpWeights& w) {
    if (w.gate.rows != w.up.rows) throw Error("CUDA K3: an MLP's gate and up projections differ in rows");
    return DMlp{stacked({&w.gate, &w.up}), mat(w.down), w.gate.rows};
  }
  // Matrices with the same width and dtype stacked into one [sum rows][cols] matrix: one GEMV
  // launch instead of several, each output row reduced exactly as it would be alone.
  DevMat stacked(std::initializer_list<const Mat*> ms) {
    const Mat& f = **ms.begin();
    uint64_t n = 0;
    int64_t rows = 0;
    for (const Mat* m : ms) {
      if (m->dtype != f.dtype || m->cols != f.cols) throw Error("CUDA K3: stacked matrices differ in dtype or width");
      n += m->bytes();
      rows += m->rows;
    }
    if (skip) return DevMat{nullptr, f.dtype == DType::BF16, rows, f.cols};
    if (unit) return streamed(ms);
    if (!copy) {
      arena.reserve(n);
      return {};
    }
    auto* p = static_cast<uint8_t*>(arena.take(n));
    uint64_t off = 0;
    for (const Mat* m : ms) {
      check_cuda(cudaMemcpy(p + off, m->data, m->bytes(), cudaMemcpyHostToDevice), "cudaMemcpy (weights)");
      off += m->bytes();
    }
    return DevMat{p, f.dtype == DType::BF16, rows, f.cols};
  }
  // One matrix (or a stack) of a streamed unit: its pieces in the unit's buffer layout; the bytes
  // into the pinned copy unless they come from disk per pass.
  DevMat streamed(std::initializer_list<const Mat*> ms) {
    const Mat& f = **ms.begin();
    uint64_t n = 0;
    int64_t rows = 0;
    for (const Mat* m : ms) n += m->bytes(), rows += m->rows;
    const uint64_t at = unit->cursor;
    unit->cursor += DeviceArena::round(n);
    if (!copy) {
      unit->bytes = unit->cursor;
      return DevMat{nullptr, f.dtype == DType::BF16, rows, f.cols};
    }
    uint64_t off = at;
    for (const Mat* m : ms) {
      const size_t field =
          base ? size_t(reinterpret_cast<const uint8_t*>(m) - reinterpret_cast<const uint8_t*>(base)) : kHeadField;
      unit->pieces.push_back(StreamPiece{field, off, m->bytes()});
      if (!unit->from_disk && !unit->from_host) std::memcpy(unit->pinned.as() + off, m->data, m->bytes());
      off += m->bytes();
    }
    return DevMat{slot0 + at, f.dtype == DType::BF16, rows, f.cols};
  }
};

// Points the unit's Uploader state at unit u of the layout (VRAM, streamed or skipped).
void select_unit(Uploader& u, CudaK3Weights& d, const placement::SplitLayout& lay, int unit, const LayerWeights* base) {
  const placement::SplitUnit& s = lay.unit(unit);
  u.skip = s.gpu == placement::GpuCopy::None;
  u.unit = s.gpu == placement::GpuCopy::Streamed ? &d.stream[size_t(unit)] : nullptr;
  u.base = base;
  if (u.unit) {
    u.unit->used = true;
    u.unit->from_disk = s.from_disk;
    u.unit->cursor = 0;
    if (u.copy) u.unit->pieces.clear();
  }
}

void walk(Uploader& u, const K3Config& c, const K3Weights& w, CudaK3Weights& d, const placement::SplitLayout& lay,
          bool split) {
  d.stream.resize(size_t(c.layers) + 1);
  // A split forward embeds on the host; the whole-spine forward gathers rows on the GPU.
  const bool head_vram = lay.lm_head.gpu == placement::GpuCopy::Vram;
  d.embed = !split || (c.tie_word_embeddings && head_vram) ? u.mat(w.embed) : DevMat{};
  select_unit(u, d, lay, c.layers, nullptr);
  d.lm_head = c.tie_word_embeddings && head_vram ? d.embed : u.mat(w.lm_head);
  u.skip = false;
  u.unit = nullptr;
  d.final_norm = u.vec(w.final_norm);
  d.output_res = u.vec(w.output_res.w);
  d.layers.assign(c.layers, {});
  for (int l = 0; l < c.layers; ++l) {
    const LayerWeights& L = w.layers[l];
    DLayer& D = d.layers[l];
    select_unit(u, d, lay, l, &L);
    D.mla = L.mla;
    D.moe = L.moe;
    D.input_norm = u.vec(L.input_norm);
    D.post_norm = u.vec(L.post_attn_norm);
    D.attn_res = u.vec(L.attn_res.w);
    D.mlp_res = u.vec(L.mlp_res.w);
    if (L.mla) {
      const MlaWeights& m = L.mla_w;
      D.mla_w = DMla{u.mat(m.q_a_proj),  u.mat(m.q_b_proj), u.mat(m.kv_a_proj),
                     u.mat(m.kv_b_proj), u.mat(m.o_proj),   c.mla_output_gate ? u.mat(m.g_proj) : DevMat{},
                     u.vec(m.q_a_norm),  u.vec(m.kv_a_norm)};
    } else {
      const KdaWeights& k = L.kda;
      D.kda = DKda{u.stacked({&k.q_proj, &k.k_proj, &k.v_proj}),
                   u.mat(k.g_proj),
                   u.mat(k.o_proj),
                   u.mat(k.f_a),
                   u.mat(k.f_b),
                   u.mat(k.b_proj),
                   u.vec(k.q_conv),
                   u.vec(k.k_conv),
                   u.vec(k.v_conv),
                   u.vec(k.a_log),
                   u.vec(k.dt_bias),
                   u.vec(k.o_norm)};
    }
    if (!L.moe) {
      D.dense = u.mlp(L.dense);
      continue;
    }
    const MoeWeights& mw = L.moe_w;
    D.moe_w.router = u.mat(mw.router);
    D.moe_w.bias = u.vec(mw.router_bias);
    D.moe_w.latent_down = u.mat(mw.latent_down);
    D.moe_w.latent_up = u.mat(mw.latent_up);
    D.moe_w.latent_norm = u.vec(mw.latent_norm);
    D.moe_w.has_shared = mw.has_shared;
    if (mw.has_shared) D.moe_w.shared = u.mlp(mw.shared);
  }
  u.skip = false;
  u.unit = nullptr;
}

// The same layer's matrices seen in stream buffer 1 instead of 0.
void rebase(DevMat& m, const uint8_t* from, uint8_t* to) {
  if (m.data) m.data = to + (static_cast<const uint8_t*>(m.data) - from);
}
DLayer rebased(DLayer L, const uint8_t* from, uint8_t* to) {
  for (DevMat* m :
       {&L.kda.qkv, &L.kda.g, &L.kda.o, &L.kda.fa, &L.kda.fb, &L.kda.b, &L.mla_w.q_a, &L.mla_w.q_b, &L.mla_w.kv_a,
        &L.mla_w.kv_b, &L.mla_w.o, &L.mla_w.g, &L.dense.gate_up, &L.dense.down, &L.moe_w.router, &L.moe_w.latent_down,
        &L.moe_w.latent_up, &L.moe_w.shared.gate_up, &L.moe_w.shared.down})
    rebase(*m, from, to);
  return L;
}

// Expert slots for kAutoSlots: the free device memory after the spine, less what one session
// allocates (fp64: MLA caches at max_context, KDA states and their snapshots, the pass's buffers
// and the experts' workspace) and a margin for the driver.
int auto_expert_slots(const K3Config& c, const CudaK3Model::Options& o, int all) {
  size_t free_b = 0, total_b = 0;
  check_cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  uint64_t session = 0;
  const uint64_t kda_state =
      (uint64_t(c.kda_heads) * c.kda_head_dim * c.kda_head_dim + 3ull * std::max(0, c.conv_kernel - 1) * c.kda_dim()) *
      8;
  for (int l = 0; l < c.layers; ++l)
    session += c.is_mla[l] ? uint64_t(o.max_context) * c.mla_cache_width() * 8 : 2 * kda_state;
  session += uint64_t(o.max_rows) *
             (uint64_t(c.vocab) * 12 + 64ull * c.hidden * 8 + uint64_t(std::max(1, c.top_k)) * c.moe_intermediate * 8);
  const uint64_t margin = (uint64_t(1) << 30) + total_b / 20;
  const uint64_t slot = VramExpertCache::slot_bytes_for(c.latent, c.moe_intermediate);
  const uint64_t need = session + margin;
  const int64_t fit = free_b > need ? int64_t((free_b - need) / slot) : 0;
  const int least = std::min(o.max_rows * c.top_k, c.experts);  // one pass's distinct experts of a layer, at most
  if (fit < least)
    throw Error("the GPU has " + std::to_string(free_b >> 20) + " MiB free after the model's spine: room for " +
                    std::to_string(fit) + " VRAM expert slots, a pass needs " + std::to_string(least),
                "use --device cpu, or a GPU with more memory");
  int64_t slots = std::min<int64_t>(fit, all);
  // DELTAFIN_VRAM_SLOTS=N caps the tier (measuring the streamed tier through the CLI on a GPU
  // that would hold every expert); never below what one pass needs.
  if (const char* e = std::getenv("DELTAFIN_VRAM_SLOTS"); e && *e) {
    const long long cap = std::atoll(e);
    if (cap > 0) slots = std::min<int64_t>(slots, std::max<int64_t>(cap, least));
  }
  return int(slots);
}

}  // namespace

CudaK3Model::CudaK3Model(const K3Model& host, Options opts)
    : host_(host), opts_(opts), w_(std::make_unique<CudaK3Weights>()) {
  if (const char* e = std::getenv("DELTAFIN_VRAM_PREFETCH"); e) {
    if (std::string(e) == "1") opts_.expert_prefetch = true;
    if (std::string(e) == "0") opts_.expert_prefetch = opts_.expert_prefetch_auto = false;
  }
  // Copies ahead of guesses in RAM need a host tier that can tell what is in RAM; over a mapping
  // the next layer's router would run for nothing.
  if (!host.experts().reports_in_memory()) opts_.expert_prefetch_auto = false;
  if (const char* e = std::getenv("DELTAFIN_GPU_HOST_GUESSES"); e && std::string(e) == "1") opts_.host_guesses = true;
  // The expert kernels have K3's SiTU betas compiled in (cuda/situ.h); other models run on the CPU.
  if (const std::string e = situ_config_error(host.config().situ_beta, host.config().situ_linear_beta); !e.empty())
    throw Error("CUDA K3: " + e, "run with --device cpu");
  std::string why;
  if (!device_available(&why)) throw Error(why, "run with --device cpu");
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (opts_.device < 0 || opts_.device >= devices)
    throw Error(
        "CUDA device " + std::to_string(opts_.device) + " is not visible (" + std::to_string(devices) + " device(s))",
        "check CUDA_VISIBLE_DEVICES and DELTAFIN_CUDA_DEVICES");
  DeviceScope on(opts_.device);
  if (opts_.max_rows < 1 || opts_.max_context < 1) throw Error("CUDA K3: max_rows and max_context must be positive");
  const K3Config& c = host.config();
  layout_ = opts_.layout ? *opts_.layout : placement::all_on_gpu(c.layers);
  layout_.check(c.layers);
  split_ = opts_.layout && (layout_.any_cpu() || layout_.streamed_units() > 0);
  for (int u = 0; u < layout_.units(); ++u)
    if (layout_.unit(u).from_disk && layout_.unit(u).gpu == placement::GpuCopy::Streamed && !host.spine())
      throw Error("the GPU placement streams a unit from disk but the host model does not stream its spine",
                  "load the host model with placement::host_spine_placement(plan)");
  Uploader plan{w_->arena, false};
  walk(plan, c, host.weights(), *w_, layout_, split());
  w_->arena.allocate();
  for (const StreamUnit& u : w_->stream) w_->stream_slot_bytes = std::max(w_->stream_slot_bytes, u.bytes);
  if (w_->stream_slot_bytes > 0)
    for (auto& b : w_->stream_buf) b = DeviceBuffer(w_->stream_slot_bytes);
  // A RAM unit the host owns (in huge pages, for its CPU passes) is pinned where it is when that is
  // on and the system allows; any other gets a pinned copy.
  const bool share = placement::shared_spine_copy();
  for (int i = 0; i < int(w_->stream.size()); ++i) {
    StreamUnit& u = w_->stream[size_t(i)];
    if (!u.used || u.from_disk) continue;
    const SpineStreamer::Span span = share && host.spine() ? host.spine()->owned_span(i) : SpineStreamer::Span{};
    if (span.base) {
      u.host_pin = HostRegistration(span.base, span.bytes);
      u.from_host = u.host_pin.ok();
    }
    if (!u.from_host) u.pinned = PinnedBuffer(u.bytes);
  }
  Uploader up{w_->arena, true};
  up.slot0 = w_->stream_slot_bytes ? static_cast<uint8_t*>(w_->stream_buf[0].data()) : nullptr;
  walk(up, c, host.weights(), *w_, layout_, split());
  if (w_->stream_slot_bytes > 0) {
    auto* b0 = static_cast<uint8_t*>(w_->stream_buf[0].data());
    auto* b1 = static_cast<uint8_t*>(w_->stream_buf[1].data());
    for (int l = 0; l < c.layers; ++l) {
      StreamUnit& u = w_->stream[size_t(l)];
      if (!u.used) continue;
      u.layer[0] = w_->layers[size_t(l)];
      u.layer[1] = rebased(u.layer[0], b0, b1);
    }
    StreamUnit& h = w_->stream[size_t(c.layers)];
    if (h.used) {
      h.head[0] = w_->lm_head;
      h.head[1] = h.head[0];
      rebase(h.head[1], b0, b1);
    }
  }
  // The experts of the MoE layers this GPU computes (one GPU of several computes only its own).
  std::vector<int> moe_here;
  for (int l = 0; l < c.layers; ++l)
    if (c.is_moe(l) && (layout_.unit(l).decode_gpu || layout_.unit(l).prefill_gpu)) moe_here.push_back(l);
  if (c.moe_layers() > 0) {
    const int all = std::max<int>(1, int(moe_here.size())) * c.experts;
    // A plan's tier, never below what one pass of one layer needs.
    const int least = std::min(opts_.max_rows * c.top_k, c.experts);
    const int planned = opts_.layout && opts_.expert_slots == 0
                            ? int(std::clamp<uint64_t>(layout_.vram_expert_slots, uint64_t(least), uint64_t(all)))
                            : 0;
    const int slots = planned > 0                                 ? planned
                      : opts_.expert_slots > 0                    ? opts_.expert_slots
                      : opts_.expert_slots == Options::kAutoSlots ? auto_expert_slots(c, opts_, all)
                                                                  : all;
    // The experts in VRAM keep the checkpoint's row layout, which the fp64 expert kernels
    // (k3::routed_experts) read.
    cache_ = std::make_unique<VramExpertCache>(host.experts(), c.latent, c.moe_intermediate, slots);
    if (slots >= all && opts_.preload && !moe_here.empty()) {
      const std::vector<int>& layers = moe_here;
      cache_->preload(layers, c.experts);
      w_->expert_tables.resize(c.layers);
      std::vector<MxExpert> views;
      for (int l : layers)
        if (cache_->resident_views(l, c.experts, views)) {
          w_->expert_tables[l] = DeviceBuffer(views.size() * sizeof(MxExpert));
          w_->expert_tables[l].upload(views.data(), views.size() * sizeof(MxExpert));
        }
      w_->tables_epoch = cache_->epoch();
    }
  }
}

uint64_t CudaK3Model::stream_buffer_bytes() const { return 2 * w_->stream_slot_bytes; }

uint64_t CudaK3Model::pinned_spine_bytes() const {
  uint64_t n = 0;
  for (const StreamUnit& u : w_->stream) n += u.pinned.size();
  return n;
}

const MxExpert* CudaK3Model::resident_experts(int layer) const {
  if (!cache_ || cache_->epoch() != w_->tables_epoch || layer < 0 || size_t(layer) >= w_->expert_tables.size())
    return nullptr;
  return w_->expert_tables[layer].as<const MxExpert>();
}

CudaK3Model::~CudaK3Model() {
  try {
    DeviceScope on(opts_.device);
    cache_.reset();
    w_.reset();
  } catch (...) {
  }
}

uint64_t CudaK3Model::spine_device_bytes() const { return w_->arena.bytes(); }

// ---------------------------------------------------------------------------------------------

namespace {
struct KdaDev {
  double *S = nullptr, *conv = nullptr, *S0 = nullptr, *conv0 = nullptr;
  double *q = nullptr, *k = nullptr, *v = nullptr, *la = nullptr, *beta = nullptr, *raw = nullptr;
};

// One pass shape (rows, partial commit, logits rows) replayed as a CUDA graph.
struct PassGraph {
  int T = 0;
  bool partial = false, all_logits = false;
  bool timed = false;    // records the layer events (set_layer_timing)
  bool traced = false;   // copies every MoE layer's routing to the pinned trace buffers
  int eager_passes = 0;  // captured only after one eager pass (lazy kernel set-up happens outside a capture)
  bool failed = false;   // the capture failed: this shape stays eager
  cudaGraphExec_t exec = nullptr;
  PassGraph() = default;
  PassGraph(const PassGraph&) = delete;
  PassGraph& operator=(const PassGraph&) = delete;
  ~PassGraph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

// Measurement switches: DELTAFIN_CUDA_GRAPHS=off runs every pass eagerly; DELTAFIN_CUDA_ROUTED=off
// takes the host-routed MoE path (routing read back) even with every expert resident.
bool env_off(const char* name) {
  const char* e = std::getenv(name);
  return e && std::string(e) == "off";
}
bool graphs_enabled() {
  static const bool on = !env_off("DELTAFIN_CUDA_GRAPHS");
  return on;
}
bool device_routing_enabled() {
  static const bool on = !env_off("DELTAFIN_CUDA_ROUTED");
  return on;
}
// DELTAFIN_CUDA_BRANCHES=off: every launch on the one stream (no concurrent branches).
bool branches_enabled() {
  static const bool on = !env_off("DELTAFIN_CUDA_BRANCHES");
  return on;
}
}  // namespace

struct CudaK3Session::Impl {
  OwnedStream stream{StreamPriority::high};
  // Independent work of a layer (small GEMVs beside big ones) runs on side streams, forked from
  // and joined back into `stream` with events, so it overlaps in eager passes and becomes parallel
  // branches of a captured graph. Every kernel computes the same bits wherever it runs.
  // Branch 0 holds work the main chain soon waits for (the router, the latent cache rows, KDA's
  // gates) and runs at the main stream's priority; branch 1 holds work needed only at the layer's
  // end (the shared expert, the output gates) at the lowest, so its blocks fill the SMs the main
  // chain leaves free instead of queueing ahead of it (captured graphs keep the priorities:
  // cudaGraphInstantiateFlagUseNodePriority).
  OwnedStream side[2] = {OwnedStream{StreamPriority::high}, OwnedStream{StreamPriority::low}};
  OwnedEvent fork_ev, join_ev[2];
  // A stream that starts after everything queued on `stream` so far (`stream` itself without branches).
  Stream branch(int i) {
    if (!branches_enabled()) return stream.opaque();
    fork_ev.record(stream.get());
    check_cuda(cudaStreamWaitEvent(side[i].get(), fork_ev.get(), 0), "cudaStreamWaitEvent");
    return side[i].opaque();
  }
  // `stream`'s later work waits for what branch(i) queued.
  void join(int i) {
    if (!branches_enabled()) return;
    join_ev[i].record(side[i].get());
    check_cuda(cudaStreamWaitEvent(stream.get(), join_ev[i].get(), 0), "cudaStreamWaitEvent");
  }
  DeviceArena arena;
  int32_t* ids = nullptr;
  // Every activation and state value is fp64 (as the CPU forward's); the logits are rounded once.
  double *h = nullptr, *prefix = nullptr, *x = nullptr, *a = nullptr, *mixed = nullptr, *m = nullptr;
  std::vector<double*> blocks;
  double *gate = nullptr, *fa = nullptr, *fb = nullptr, *braw = nullptr, *o = nullptr;
  double *qa = nullptr, *q = nullptr, *ckv = nullptr, *qabs = nullptr, *olat = nullptr, *scores = nullptr;
  double *attn = nullptr, *g = nullptr;
  double* res_scores = nullptr;  // [T][kMaxResEntries] AttnRes scores between its two launches
  double *rl = nullptr, *z = nullptr, *y = nullptr, *sh = nullptr, *rw = nullptr;
  double* eh = nullptr;                          // the routed experts' workspace (k3::routed_experts_scratch)
  double *mlp_gu = nullptr, *mlp_act = nullptr;  // dense MLP / shared expert: [T][gate | up], [T][SiTU GLU]
  int32_t* rid = nullptr;
  // moe_streamed: the pass's experts (the tier's views in id order) and each slot's index among them.
  MxExpert* table_dev = nullptr;
  int32_t* slot_dev = nullptr;
  // guesses(): the next MoE layer's router on this layer's input, its top-k, on the host.
  double *rl_next = nullptr, *rw_next = nullptr;
  int32_t* rid_next = nullptr;
  int64_t* n_past = nullptr;  // the pass's first row, read by the MLA kernels when they run
  double* logits64 = nullptr;
  float* logits = nullptr;  // logits64 rounded
  std::vector<KdaDev> kda;
  std::vector<double*> cache;
  PinnedBuffer host_ids, host_rid, host_rw, host_n_past, host_rid_next, host_rw_next, host_table, host_slot;
  PinnedBuffer trace_rid, trace_rw;  // routed passes: every MoE layer's routing, read after the pass
  std::vector<MxExpert> experts;     // moe_streamed: the tier's views of one pass's experts, by id
  size_t S_vals = 0, conv_vals = 0;
  OwnedEvent routed;                                  // the routing of the current MoE layer has reached the host
  PassTimeline timeline;                              // passes in parts: where they wait (DELTAFIN_CUDA_TIMELINE)
  std::vector<std::unique_ptr<OwnedEvent>> layer_ev;  // [layers + 1] when timing
  bool timed_pass = false;
  bool replayed = false;  // the last pass was a graph launch
  std::vector<std::unique_ptr<PassGraph>> graphs;
  uint64_t graphs_epoch = 0;  // the expert tables the graphs were captured with
  // Passes in parts (a split forward).
  std::vector<const DLayer*> lw;  // the weights each layer computes with this pass (VRAM, or a stream buffer)
  std::vector<char> ran;          // the layers this session ran in the staged pass
  PassOptions pass;
  bool pass_routed = false;
  OwnedStream copy_stream;            // host-to-device copies of streamed units
  OwnedEvent copied[2], consumed[2];  // per stream buffer: its copy landed; its unit's compute ended
  std::vector<placement::StreamStep> schedule;
  size_t next_step = 0;
  PinnedBuffer handover;  // hand-overs from another GPU without a direct copy
};

CudaK3Session::CudaK3Session(const CudaK3Model& model) : m_(model) {
  DeviceScope on(model.device());
  d_ = std::make_unique<Impl>();
  const K3Config& c = model.config();
  const auto& W = model.weights();
  const int64_t T = model.options().max_rows, H = c.hidden, C = c.kda_dim(), V = c.vocab;
  const int64_t nh = c.mla_heads, R = c.kv_lora_rank, P = c.qk_rope, Vd = c.v_head, qh = c.mla_qk_head();
  const int64_t ctx = model.options().max_context;
  int64_t rank = 0, inter = 0;
  for (const auto& L : W.layers) {
    rank = std::max(rank, L.kda.fa.rows);
    inter = std::max({inter, L.dense.inter, L.moe_w.shared.inter});
  }
  d_->S_vals = size_t(c.kda_heads) * c.kda_head_dim * c.kda_head_dim;
  d_->conv_vals = size_t(3) * (c.conv_kernel - 1) * C;
  const int nblocks = (c.layers + c.attn_res_block - 1) / std::max(1, c.attn_res_block) + 1;
  DeviceArena& A = d_->arena;
  // The same sequence of sizes is reserved, then taken.
  for (int pass = 0; pass < 2; ++pass) {
    const bool take = pass == 1;
    // n values of 8 bytes (the int arrays take as many bytes as their count of doubles).
    auto f = [&](int64_t n) -> double* {
      if (!take) {
        A.reserve(size_t(std::max<int64_t>(n, 1)) * 8);
        return nullptr;
      }
      return A.take_n<double>(size_t(std::max<int64_t>(n, 1)));
    };
    d_->ids = reinterpret_cast<int32_t*>(f(T));
    d_->h = f(T * H);
    d_->prefix = f(T * H);
    d_->x = f(T * H);
    d_->a = f(T * H);
    d_->mixed = f(T * H);
    d_->m = f(T * H);
    d_->blocks.assign(nblocks, nullptr);
    for (auto& b : d_->blocks) b = f(T * H);
    d_->gate = f(T * C);
    d_->fa = f(T * rank);
    d_->fb = f(T * C);
    d_->braw = f(T * c.kda_heads);
    d_->o = f(T * C);
    d_->qa = f(T * c.q_lora_rank);
    d_->q = f(T * nh * qh);
    d_->ckv = f(T * (R + P));
    d_->qabs = f(T * nh * R);
    d_->olat = f(T * nh * R);
    d_->scores = f(T * nh * ctx);
    d_->attn = f(T * nh * Vd);
    d_->g = f(T * nh * Vd);
    d_->res_scores = f(T * k3::kMaxResEntries);
    d_->rl = f(T * c.experts);
    d_->z = f(T * c.latent);
    d_->y = f(T * c.latent);
    d_->sh = f(T * H);
    d_->eh = f(k3::routed_experts_scratch(int(T), std::max(1, c.top_k), c.latent, c.moe_intermediate));
    d_->slot_dev = reinterpret_cast<int32_t*>(f(T * std::max(1, c.top_k)));
    d_->table_dev = reinterpret_cast<MxExpert*>(
        f(T * std::max(1, c.top_k) * int64_t((sizeof(MxExpert) + sizeof(double) - 1) / sizeof(double))));
    d_->mlp_gu = f(T * 2 * inter);
    d_->mlp_act = f(T * inter);
    // One routing slot per MoE layer: a traced pass reads them all after its last layer, so no
    // layer waits on a copy to the host.
    const int64_t route_n = int64_t(std::max(1, c.moe_layers())) * T * c.top_k;
    d_->rw = f(route_n);
    d_->rid = reinterpret_cast<int32_t*>(f(route_n));
    if (m_.options().guesses()) {
      d_->rl_next = f(T * c.experts);
      d_->rw_next = f(T * c.top_k);
      d_->rid_next = reinterpret_cast<int32_t*>(f(T * c.top_k));
    }
    d_->n_past = reinterpret_cast<int64_t*>(f(2));
    d_->logits64 = f(T * V);
    d_->logits = reinterpret_cast<float*>(f((T * V + 1) / 2));
    d_->kda.assign(c.layers, {});
    d_->cache.assign(c.layers, nullptr);
    for (int l = 0; l < c.layers; ++l) {
      if (c.is_mla[l]) {
        d_->cache[l] = f(ctx * (R + P));
        continue;
      }
      KdaDev& k = d_->kda[l];
      k.S = f(d_->S_vals);
      k.S0 = f(d_->S_vals);
      k.conv = f(d_->conv_vals);
      k.conv0 = f(d_->conv_vals);
      k.q = f(T * C);
      k.k = f(T * C);
      k.v = f(T * C);
      k.la = f(T * C);
      k.beta = f(T * c.kda_heads);
      k.raw = f(T * 3 * C);
    }
    if (!take) A.allocate();
  }
  d_->host_ids = PinnedBuffer(size_t(T) * 4);
  d_->host_rid = PinnedBuffer(size_t(T) * std::max(1, c.top_k) * 4);
  d_->host_rw = PinnedBuffer(size_t(T) * std::max(1, c.top_k) * 8);
  d_->host_slot = PinnedBuffer(size_t(T) * std::max(1, c.top_k) * 4);
  d_->host_table = PinnedBuffer(size_t(T) * std::max(1, c.top_k) * sizeof(MxExpert));
  if (m_.options().guesses()) d_->host_rid_next = PinnedBuffer(size_t(T) * std::max(1, c.top_k) * 4);
  if (m_.options().host_guesses) d_->host_rw_next = PinnedBuffer(size_t(T) * std::max(1, c.top_k) * 8);
  d_->host_n_past = PinnedBuffer(sizeof(int64_t));
  const size_t trace_n = size_t(std::max(1, c.moe_layers())) * T * std::max(1, c.top_k);
  d_->trace_rid = PinnedBuffer(trace_n * 4);
  d_->trace_rw = PinnedBuffer(trace_n * 8);
  d_->lw.resize(size_t(c.layers));
  for (int l = 0; l < c.layers; ++l) d_->lw[size_t(l)] = &W.layers[size_t(l)];
  d_->ran.assign(size_t(c.layers), 1);
  reset();
}

CudaK3Session::~CudaK3Session() {
  try {
    DeviceScope on(m_.device());
    d_.reset();
  } catch (...) {
  }
}

void CudaK3Session::sync() const {
  DeviceScope on(m_.device());
  d_->stream.sync();
}

void CudaK3Session::set_layer_timing(bool on) {
  DeviceScope dev(m_.device());
  d_->graphs.clear();  // graphs captured with timing name the events replaced here
  d_->layer_ev.clear();
  if (on)
    for (int l = 0; l <= m_.config().layers; ++l) d_->layer_ev.push_back(std::make_unique<OwnedEvent>(true));
}

bool CudaK3Session::last_pass_replayed() const { return d_->replayed; }

std::vector<float> CudaK3Session::layer_ms() const {
  std::vector<float> ms;
  if (d_->layer_ev.empty() || !d_->timed_pass) return ms;
  for (size_t l = 0; l + 1 < d_->layer_ev.size(); ++l) ms.push_back(d_->layer_ev[l + 1]->since(*d_->layer_ev[l]));
  return ms;
}

void CudaK3Session::reset() {
  DeviceScope on(m_.device());
  const K3Config& c = m_.config();
  cudaStream_t s = d_->stream.get();
  for (int l = 0; l < c.layers; ++l) {
    if (c.is_mla[l]) continue;
    check_cuda(cudaMemsetAsync(d_->kda[l].S, 0, d_->S_vals * 8, s), "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(d_->kda[l].conv, 0, d_->conv_vals * 8, s), "cudaMemsetAsync");
  }
  d_->stream.sync();
  n_past_ = 0;
  staged_T_ = 0;
  staged_partial_ = false;
}

std::optional<VramTierStats> CudaK3Session::vram_tier() const {
  const VramExpertCache& v = m_.experts();
  const K3Config& c = m_.config();
  VramTierStats s;
  s.slot_count = v.slots();
  s.slot_bytes = v.slot_bytes();
  s.all_resident = true;
  for (int l = 0; l < c.layers; ++l)
    if (c.is_moe(l)) s.all_resident = s.all_resident && m_.resident_experts(l) != nullptr;
  if (!s.all_resident) s.resident = v.resident_experts();
  const VramTierCounters& k = v.counters();
  s.requests = k.requests;
  s.hits = k.hits;
  s.misses = k.misses;
  s.bytes_h2d = k.bytes_h2d;
  s.direct = k.direct;
  s.fill_seconds = k.fill_seconds;
  return s;
}

void CudaK3Session::layer_to_host(int l, KdaLayerState& kda, MlaLayerState& mla) const {
  const K3Config& c = m_.config();
  // fp64 here as in K3State (the CPU forward's): copied as it is.
  auto down = [](std::vector<double>& to, const double* from, size_t n) {
    to.resize(n);
    check_cuda(cudaMemcpy(to.data(), from, n * 8, cudaMemcpyDeviceToHost), "cudaMemcpy (state to the host)");
  };
  if (c.is_mla[l]) {
    down(mla.cache, d_->cache[l], size_t(n_past_) * c.mla_cache_width());
    kda.S.clear();
    kda.conv.clear();
  } else {
    down(kda.S, d_->kda[l].S, d_->S_vals);
    down(kda.conv, d_->kda[l].conv, d_->conv_vals);
    mla.cache.clear();
  }
}

void CudaK3Session::layer_to_device(int l, const KdaLayerState& kda, const MlaLayerState& mla) {
  cudaStream_t s = d_->stream.get();
  auto up = [s](double* to, const std::vector<double>& from) {
    check_cuda(cudaMemcpyAsync(to, from.data(), from.size() * 8, cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync (state to the GPU)");
  };
  if (m_.config().is_mla[l]) {
    up(d_->cache[l], mla.cache);
  } else {
    up(d_->kda[l].S, kda.S);
    up(d_->kda[l].conv, kda.conv);
  }
}

K3State CudaK3Session::save_state() const {
  if (staged_T_ > 0) throw Error("cannot save the state while a pass is staged", "commit or roll back first");
  DeviceScope on(m_.device());
  const K3Config& c = m_.config();
  K3State st;
  st.n_past = n_past_;
  st.kda.resize(c.layers);
  st.mla.resize(c.layers);
  d_->stream.sync();
  for (int l = 0; l < c.layers; ++l) layer_to_host(l, st.kda[l], st.mla[l]);
  return st;
}

void CudaK3Session::load_state(K3State state) {
  if (staged_T_ > 0) throw Error("cannot load a state while a pass is staged", "commit or roll back first");
  DeviceScope on(m_.device());
  const K3Config& c = m_.config();
  check_state_fits(c, state);
  if (state.n_past > m_.options().max_context)
    throw Error("the state holds " + std::to_string(state.n_past) + " tokens, more than this GPU session's " +
                    std::to_string(m_.options().max_context),
                "start the session with a larger context");
  d_->stream.sync();
  for (int l = 0; l < c.layers; ++l) layer_to_device(l, state.kda[l], state.mla[l]);
  d_->stream.sync();
  n_past_ = state.n_past;
}

void CudaK3Session::export_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) {
  if (staged_T_ > 0) throw Error("cannot move a layer's state while a pass is staged", "commit or roll back first");
  if (layer < 0 || layer >= m_.config().layers) throw Error("export_layer: no layer " + std::to_string(layer));
  DeviceScope on(m_.device());
  d_->stream.sync();
  layer_to_host(layer, kda, mla);
}

void CudaK3Session::import_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) {
  if (staged_T_ > 0) throw Error("cannot move a layer's state while a pass is staged", "commit or roll back first");
  check_layer_state_fits(m_.config(), layer, kda, mla, n_past_);
  DeviceScope on(m_.device());
  d_->stream.sync();
  layer_to_device(layer, kda, mla);
  d_->stream.sync();  // kda and mla may be reused as soon as this returns
}

void CudaK3Session::stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) {
  if (m_.split())
    throw Error("this GPU model holds part of the spine: its passes run in parts", "use placement::SplitSession");
  check_pass(ids);
  DeviceScope on(m_.device());
  const K3Config& c = m_.config();
  const int T = static_cast<int>(ids.size());
  std::fill(d_->ran.begin(), d_->ran.end(), 1);
  cudaStream_t s = d_->stream.get();
  staged_T_ = T;
  staged_partial_ = opts.partial_commit;
  ForwardTrace* tr = opts.trace;
  if (tr) {
    tr->layers.clear();
    tr->topk_ids.clear();
    tr->topk_weights.clear();
  }
  // Routed: every MoE layer's experts are resident, so the routing stays on the device and the
  // pass has no host round trip; it can then be replayed as a CUDA graph.
  bool routed = device_routing_enabled();
  for (int l = 0; l < c.layers; ++l)
    if (c.is_moe(l) && !m_.resident_experts(l)) routed = false;
  const bool timing = !d_->layer_ev.empty();
  d_->timed_pass = timing;
  // What the pass reads from the host travels through pinned buffers the graph's copies name.
  std::memcpy(d_->host_ids.as<int32_t>(), ids.data(), size_t(T) * 4);
  *d_->host_n_past.as<int64_t>() = n_past_;
  const int first = opts.all_logits ? 0 : T - 1;
  try {
    // A trace that reads every layer's output waits for the device inside the pass: eager only.
    const bool traced = tr && tr->routing;
    const bool graph = routed && !(tr && tr->layer_out) && graphs_enabled();
    PassGraph* g = nullptr;
    if (graph) {
      const uint64_t epoch = c.moe_layers() > 0 ? m_.experts().epoch() : 0;
      if (epoch != d_->graphs_epoch) d_->graphs.clear();
      d_->graphs_epoch = epoch;
      for (auto& p : d_->graphs)
        if (p->T == T && p->partial == opts.partial_commit && p->all_logits == opts.all_logits && p->timed == timing &&
            p->traced == traced)
          g = p.get();
      if (!g) {
        d_->graphs.push_back(std::make_unique<PassGraph>());
        g = d_->graphs.back().get();
        g->T = T;
        g->partial = opts.partial_commit;
        g->all_logits = opts.all_logits;
        g->timed = timing;
        g->traced = traced;
      }
    }
    if (g && !g->exec && !g->failed && g->eager_passes > 0) {
      // Nothing captured has run yet, so a capture that fails costs only the graph: this shape
      // then stays eager (and a real device fault shows again in the eager pass).
      try {
        cudaGraph_t cg = nullptr;
        check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        try {
          forward(T, opts, tr, true);
        } catch (...) {
          if (cudaStreamEndCapture(s, &cg) == cudaSuccess && cg) cudaGraphDestroy(cg);
          throw;
        }
        check_cuda(cudaStreamEndCapture(s, &cg), "cudaStreamEndCapture");
        const cudaError_t err = cudaGraphInstantiate(&g->exec, cg, cudaGraphInstantiateFlagUseNodePriority);
        cudaGraphDestroy(cg);
        if (err != cudaSuccess) g->exec = nullptr;
        check_cuda(err, "cudaGraphInstantiate");
      } catch (const std::exception& ex) {
        g->failed = true;
        (void)cudaGetLastError();
        std::fprintf(stderr, "CUDA K3: capturing a %d-row pass as a CUDA graph failed (%s); it runs eagerly\n", T,
                     ex.what());
      }
    }
    d_->replayed = g && g->exec;
    if (d_->replayed) {
      check_cuda(cudaGraphLaunch(g->exec, s), "cudaGraphLaunch");
    } else {
      forward(T, opts, tr, routed);
      if (g) ++g->eager_passes;
    }
    for (int t = 0; t < T; ++t) m_.host().experts().end_token();
    logits.resize(size_t(T - first) * c.vocab);
    check_cuda(cudaMemcpyAsync(logits.data(), d_->logits, logits.size() * 4, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
    d_->stream.sync();
    if (tr && tr->routing && routed) {
      const size_t n = size_t(T) * c.top_k;
      for (int i = 0; i < c.moe_layers(); ++i) {
        const int32_t* ids_i = d_->trace_rid.as<int32_t>() + i * n;
        const double* w_i = d_->trace_rw.as<double>() + i * n;
        tr->topk_ids.emplace_back(ids_i, ids_i + n);
        tr->topk_weights.emplace_back(w_i, w_i + n);
      }
    }
  } catch (...) {
    // A failed pass may have touched any layer's state before its snapshot was taken: start over.
    try {
      d_->side[0].sync();
      d_->side[1].sync();
      d_->stream.sync();
      reset();
    } catch (...) {
    }
    staged_T_ = 0;
    throw;
  }
}

// Everything a pass puts on the stream, from the token ids to the logits rows in d_->logits;
// with routed and no trace of the layers' outputs, nothing here waits for the device or touches host
// memory other than the pinned ids, n_past and trace buffers (so it can be captured).
void CudaK3Session::forward(int T, const PassOptions& opts, ForwardTrace* tr, bool routed) {
  const K3Config& c = m_.config();
  const auto& W = m_.weights();
  const int H = c.hidden;
  cudaStream_t s = d_->stream.get();
  const Stream so = d_->stream.opaque();
  check_cuda(cudaMemcpyAsync(d_->ids, d_->host_ids.as<int32_t>(), size_t(T) * 4, cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(d_->n_past, d_->host_n_past.as<int64_t>(), sizeof(int64_t), cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  k3::gather_rows(W.embed, d_->ids, T, d_->h, so);
  const bool timing = d_->timed_pass;
  int moe_index = 0, nb = 0;
  for (int l = 0; l < c.layers; ++l) {
    if (timing) d_->layer_ev[l]->record_in_graph(s);
    run_layer(l, T, nb, moe_index, opts, tr, routed);
  }
  if (timing) d_->layer_ev[c.layers]->record_in_graph(s);
  if (routed && tr && tr->routing && moe_index > 0) {  // every MoE layer's routing, read after the pass
    const size_t n = size_t(moe_index) * T * c.top_k;
    check_cuda(cudaMemcpyAsync(d_->trace_rid.as<int32_t>(), d_->rid, n * 4, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
    check_cuda(cudaMemcpyAsync(d_->trace_rw.as<double>(), d_->rw, n * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  }
  k3::ResEntries e;
  for (int i = 0; i < nb; ++i) e.p[e.n++] = d_->blocks[i];
  e.p[e.n++] = d_->h;
  k3::attn_res_mix(e, W.output_res, T, H, c.rms_eps, d_->res_scores, d_->mixed, so);
  const int first = opts.all_logits ? 0 : T - 1;
  const int rows = T - first;
  k3::rmsnorm(d_->mixed + size_t(first) * H, H, W.final_norm, H, rows, c.rms_eps, d_->x, H, so);
  k3::gemm(W.lm_head, d_->x, H, rows, d_->logits64, c.vocab, so);
  k3::narrow(d_->logits64, d_->logits, int64_t(rows) * c.vocab, so);
}

// One layer of a pass over d_->h with nb AttnRes blocks begun; moe_index counts the MoE layers
// before it (its routing slot).
void CudaK3Session::run_layer(int l, int T, int& nb, int& moe_index, const PassOptions& opts, ForwardTrace* tr,
                              bool routed) {
  const K3Config& c = m_.config();
  const DLayer& L = *d_->lw[size_t(l)];
  const int H = c.hidden;
  const size_t TH = size_t(T) * H;
  cudaStream_t s = d_->stream.get();
  const Stream so = d_->stream.opaque();
  auto copy = [&](double* dst, const double* src, size_t n) { k3::copy(src, dst, int64_t(n), so); };
  k3::ResEntries e;
  auto entries = [&](const double* last) {
    e.n = 0;
    for (int i = 0; i < nb; ++i) e.p[e.n++] = d_->blocks[i];
    e.p[e.n++] = last;
  };
  // h is the layer's input and stays so until the layer's end writes it: it is the prefix
  // (the partial block's sum) until the attention is added, and the mix goes to `mixed`.
  bool have_prefix = true;
  const double* attn_in = d_->h;
  if (nb > 0) {
    entries(d_->h);
    k3::attn_res_mix(e, L.attn_res, T, H, c.rms_eps, d_->res_scores, d_->mixed, so);
    attn_in = d_->mixed;
  }
  if (l % c.attn_res_block == 0) {
    if (nb + 1 >= k3::kMaxResEntries || nb >= int(d_->blocks.size()))
      throw Error("CUDA K3: more AttnRes blocks than the kernel takes");
    copy(d_->blocks[nb++], d_->h, TH);
    have_prefix = false;
  }
  k3::rmsnorm(attn_in, H, L.input_norm, H, T, c.rms_eps, d_->x, H, so);
  if (L.mla) attention_mla(l, T);
  else attention_kda(l, T, opts.partial_commit);
  if (have_prefix) k3::add(d_->h, d_->a, d_->prefix, int64_t(TH), so);
  else copy(d_->prefix, d_->a, TH);
  entries(d_->prefix);
  k3::attn_res_mix(e, L.mlp_res, T, H, c.rms_eps, d_->res_scores, d_->mixed, so);
  k3::rmsnorm(d_->mixed, H, L.post_norm, H, T, c.rms_eps, d_->x, H, so);
  const double* shared_out = nullptr;  // the MoE's shared expert, added with its routed sum below
  if (L.moe) {
    moe(l, moe_index, T, tr && tr->routing ? tr : nullptr, routed);
    if (L.moe_w.has_shared) shared_out = d_->sh;
    ++moe_index;
  } else {
    dense(l, false, T, d_->x, d_->m, so);
  }
  k3::add_sum(d_->prefix, d_->m, shared_out, d_->h, int64_t(TH), so);  // prefix + (routed + shared)
  if (tr && tr->layer_out) {
    std::vector<double> out(TH);
    check_cuda(cudaMemcpyAsync(out.data(), d_->h, TH * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    d_->stream.sync();
    tr->layers.emplace_back(out.begin(), out.end());
    if (tr->layer_out64) tr->layers64.push_back(std::move(out));
  }
}

// ---------------------------------------------------------------------------------------------
// Passes in parts (placement::SplitSession).

void CudaK3Session::check_pass(std::span<const int32_t> ids) const {
  const K3Config& c = m_.config();
  if (staged_T_ > 0) throw Error("a pass is already staged", "commit or roll back before staging another");
  const int T = static_cast<int>(ids.size());
  if (T == 0) throw Error("stage() called with no tokens");
  if (T > m_.options().max_rows)
    throw Error(
        "a CUDA pass of " + std::to_string(T) + " rows exceeds max_rows " + std::to_string(m_.options().max_rows),
        "stage fewer rows per pass (prefill() splits long prompts)");
  if (n_past_ + T > m_.options().max_context)
    throw Error("the CUDA session's context is full (" + std::to_string(m_.options().max_context) + " tokens)",
                "start a new session or allocate a larger max_context");
  for (int32_t id : ids)
    if (id < 0 || id >= c.vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(c.vocab - 1) +
                  ")");
}

void CudaK3Session::begin_pass(std::span<const int32_t> ids, const PassOptions& opts) {
  if (opts.trace) throw Error("a pass run in parts takes no trace", "trace a pass run by one session");
  check_pass(ids);
  DeviceScope on(m_.device());
  const K3Config& c = m_.config();
  const int T = static_cast<int>(ids.size());
  d_->timeline.begin(T);
  d_->timeline.mark("pass begins", T, d_->stream.get());
  // Routing stays on the device when every MoE layer this pass computes here has its experts resident.
  bool routed = device_routing_enabled();
  for (int l = 0; l < c.layers; ++l)
    if (c.is_moe(l) && m_.layout().on_gpu(l, T) && !m_.resident_experts(l)) routed = false;
  d_->pass = opts;
  d_->pass_routed = routed;
  d_->timed_pass = false;
  d_->replayed = false;
  std::fill(d_->ran.begin(), d_->ran.end(), 0);
  *d_->host_n_past.as<int64_t>() = n_past_;
  check_cuda(cudaMemcpyAsync(d_->n_past, d_->host_n_past.as<int64_t>(), sizeof(int64_t), cudaMemcpyHostToDevice,
                             d_->stream.get()),
             "cudaMemcpyAsync");
  staged_T_ = T;
  staged_partial_ = opts.partial_commit;
  d_->schedule = placement::stream_schedule(m_.layout(), T);
  d_->next_step = 0;
  advance_schedule(-1);  // the first unit from RAM starts copying now, under the layers before it
}

void CudaK3Session::issue_copy(int step) {
  const placement::StreamStep& st = d_->schedule[size_t(step)];
  const auto& W = m_.weights();
  const StreamUnit& u = W.stream.at(size_t(st.unit));
  cudaStream_t cs = d_->copy_stream.get();
  if (st.after >= 0) check_cuda(cudaStreamWaitEvent(cs, d_->consumed[st.slot].get(), 0), "cudaStreamWaitEvent");
  d_->timeline.mark("unit copy starts", st.unit, cs);
  auto* dst = static_cast<uint8_t*>(W.stream_buf[st.slot].data());
  if (u.from_host) {
    // The host's owned (pinned) unit, one copy per matrix; its bound weights point into it.
    const K3Weights& hw = m_.host().weights();
    const bool head = st.unit == m_.config().layers;
    const auto* base = head ? nullptr : reinterpret_cast<const uint8_t*>(&hw.layers[size_t(st.unit)]);
    for (const StreamPiece& p : u.pieces) {
      const Mat& m = p.field == kHeadField ? hw.lm_head : *reinterpret_cast<const Mat*>(base + p.field);
      check_cuda(cudaMemcpyAsync(dst + p.dst, m.data, p.bytes, cudaMemcpyHostToDevice, cs),
                 "cudaMemcpyAsync (a streamed layer)");
    }
  } else if (!u.from_disk) {
    check_cuda(cudaMemcpyAsync(dst, u.pinned.as(), u.bytes, cudaMemcpyHostToDevice, cs),
               "cudaMemcpyAsync (a streamed layer)");
  } else {
    // Read from disk by the host model's spine streamer (double-buffered there), then copied from
    // its pageable buffer; the buffer is released once the copy has finished.
    SpineStreamer* sp = m_.host().spine();
    const bool head = st.unit == m_.config().layers;
    const void* base =
        head ? static_cast<const void*>(&sp->acquire_lm_head()) : static_cast<const void*>(&sp->acquire(st.unit));
    struct Lease {
      SpineStreamer* sp;
      int unit;
      bool head;
      ~Lease() {
        if (head) sp->release_lm_head();
        else sp->release(unit);
      }
    } lease{sp, st.unit, head};
    for (const StreamPiece& p : u.pieces) {
      const Mat& m = p.field == kHeadField ? *static_cast<const Mat*>(base)
                                           : *reinterpret_cast<const Mat*>(static_cast<const uint8_t*>(base) + p.field);
      check_cuda(cudaMemcpyAsync(dst + p.dst, m.data, p.bytes, cudaMemcpyHostToDevice, cs),
                 "cudaMemcpyAsync (a streamed layer)");
    }
    check_cuda(cudaStreamSynchronize(cs), "cudaStreamSynchronize (a streamed layer)");
  }
  d_->timeline.mark("unit copy ends", st.unit, cs);
  d_->copied[st.slot].record(cs);
}

void CudaK3Session::advance_schedule(int u) {
  auto& sch = d_->schedule;
  if (u >= 0) {
    for (; d_->next_step < sch.size(); ++d_->next_step) {
      const placement::StreamStep& st = sch[d_->next_step];
      if (st.kind == placement::StreamStep::Compute) {
        if (st.unit != u)
          throw Error("CUDA K3: streamed unit " + std::to_string(u) + " computed out of the schedule's order");
        break;
      }
      issue_copy(int(d_->next_step));
    }
    if (d_->next_step == sch.size())
      throw Error("CUDA K3: unit " + std::to_string(u) + " is not in this pass's stream schedule");
    const placement::StreamStep& st = sch[d_->next_step++];
    check_cuda(cudaStreamWaitEvent(d_->stream.get(), d_->copied[st.slot].get(), 0), "cudaStreamWaitEvent");
    const auto& W = m_.weights();
    if (u < m_.config().layers) d_->lw[size_t(u)] = &W.stream[size_t(u)].layer[st.slot];
    return;
  }
  // Copies from RAM go out as early as the schedule allows; a copy from disk waits for its turn.
  while (d_->next_step < sch.size()) {
    const placement::StreamStep& st = sch[d_->next_step];
    if (st.kind != placement::StreamStep::Copy || m_.layout().unit(st.unit).from_disk) break;
    issue_copy(int(d_->next_step++));
  }
}

void CudaK3Session::upload_stream(const ResidualStream& rs, int& nb) {
  const K3Config& c = m_.config();
  const size_t TH = size_t(rs.T) * c.hidden;
  if (staged_T_ == 0) throw Error("a pass in parts without begin_pass");
  if (rs.T != staged_T_ || rs.h.size() != TH || rs.blocks.size() >= d_->blocks.size())
    throw Error("the residual stream does not fit the staged pass");
  nb = int(rs.blocks.size());
  if (rs.held_by == this) return;  // this session's own output: already in place
  if (rs.held_by) {
    const auto* from = dynamic_cast<const CudaK3Session*>(rs.held_by);
    if (!from) throw Error("CUDA K3: the residual stream is in a device memory this session cannot read");
    receive_stream(*from, rs.T, nb);
    return;
  }
  // fp64 on both sides (the CPU forward's and this session's): the bits cross as they are. The
  // host vectors stay unchanged until the pass's next hand-over, after this stream has synced.
  cudaStream_t s = d_->stream.get();
  check_cuda(cudaMemcpyAsync(d_->h, rs.h.data(), TH * 8, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (hand-over)");
  for (size_t i = 0; i < rs.blocks.size(); ++i)
    check_cuda(cudaMemcpyAsync(d_->blocks[i], rs.blocks[i].data(), TH * 8, cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync (hand-over)");
}

// The device's h and blocks [b0, nb) into rs: h replaced, blocks from b0 on written in place
// (b0 = rs.blocks.size() appends).
void CudaK3Session::download_stream(ResidualStream& rs, int b0, int nb) {
  const size_t TH = size_t(rs.T) * m_.config().hidden;
  cudaStream_t s = d_->stream.get();
  rs.h.resize(TH);
  rs.blocks.resize(size_t(nb));
  check_cuda(cudaMemcpyAsync(rs.h.data(), d_->h, TH * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (hand-over)");
  for (int i = b0; i < nb; ++i) {
    rs.blocks[size_t(i)].resize(TH);
    check_cuda(cudaMemcpyAsync(rs.blocks[size_t(i)].data(), d_->blocks[i], TH * 8, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync (hand-over)");
  }
  d_->stream.sync();
}

bool CudaK3Session::takes_stream_from(const LayerRangeSession& from) const {
  const auto* g = dynamic_cast<const CudaK3Session*>(&from);
  return g && g != this && g->m_.config().hidden == m_.config().hidden;
}

namespace {
// Whether `to` can read `from`'s memory directly, with peer access enabled on first use (once per
// pair of devices in the process).
bool peer_copy(int from, int to) {
  static std::mutex mu;
  static std::vector<std::pair<int, int>> enabled;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& p : enabled)
    if (p.first == from && p.second == to) return true;
  int can = 0;
  check_cuda(cudaDeviceCanAccessPeer(&can, to, from), "cudaDeviceCanAccessPeer");
  if (!can) return false;
  DeviceScope on(to);
  const cudaError_t e = cudaDeviceEnablePeerAccess(from, 0);
  if (e != cudaSuccess) cudaGetLastError();  // clear it: the copies are exact on every path
  // Refused (e.g. too many peers): the hand-overs cross pinned host memory instead.
  if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return false;
  enabled.emplace_back(from, to);
  return true;
}
}  // namespace

// The stream `from` left in its device memory (its h and its first nb blocks) into this session's:
// one device-to-device copy each within a device or between peers, else through pinned host
// memory. `from`'s stream has finished (its run_layers ends with a sync), and the copies are
// exact, so the layers after the boundary see the same bits as on one GPU.
void CudaK3Session::receive_stream(const CudaK3Session& from, int T, int nb) {
  const size_t bytes = size_t(T) * m_.config().hidden * 8;
  if (nb >= int(d_->blocks.size()) || nb >= int(from.d_->blocks.size()))
    throw Error("CUDA K3: the residual stream does not fit the staged pass");
  std::vector<std::pair<double*, const double*>> parts{{d_->h, from.d_->h}};
  for (int i = 0; i < nb; ++i) parts.emplace_back(d_->blocks[size_t(i)], from.d_->blocks[size_t(i)]);
  cudaStream_t s = d_->stream.get();
  const int src = from.m_.device(), dst = m_.device();
  const bool forced_host = m_.options().host_handover || from.m_.options().host_handover;
  if (!forced_host && src == dst) {
    for (auto [to, fr] : parts)
      check_cuda(cudaMemcpyAsync(to, fr, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync (hand-over)");
    ++handovers_.same_device;
  } else if (!forced_host && peer_copy(src, dst)) {
    for (auto [to, fr] : parts)
      check_cuda(cudaMemcpyPeerAsync(to, dst, fr, src, bytes, s), "cudaMemcpyPeerAsync (hand-over)");
    ++handovers_.peer;
  } else {
    if (d_->handover.size() < bytes * parts.size()) d_->handover = PinnedBuffer(bytes * parts.size());
    uint8_t* staging = d_->handover.as();
    {
      DeviceScope on(src);
      for (size_t i = 0; i < parts.size(); ++i)
        check_cuda(cudaMemcpy(staging + i * bytes, parts[i].second, bytes, cudaMemcpyDeviceToHost),
                   "cudaMemcpy (hand-over to the host)");
    }
    for (size_t i = 0; i < parts.size(); ++i)
      check_cuda(cudaMemcpyAsync(parts[i].first, staging + i * bytes, bytes, cudaMemcpyHostToDevice, s),
                 "cudaMemcpyAsync (hand-over)");
    ++handovers_.host;
  }
}

void CudaK3Session::stream_to_host(ResidualStream& rs) {
  if (rs.held_by != this) throw Error("stream_to_host: this session does not hold the residual stream");
  DeviceScope on(m_.device());
  download_stream(rs, 0, int(rs.blocks.size()));
  rs.held_by = nullptr;
}

void CudaK3Session::run_layers(int first, int last, ResidualStream& rs) {
  const K3Config& c = m_.config();
  if (first < 0 || last > c.layers || first > last) throw Error("run_layers: layers outside the model");
  DeviceScope on(m_.device());
  int nb = 0;
  upload_stream(rs, nb);
  const int nb0 = nb;
  int moe_index = 0;
  for (int l = 0; l < first; ++l) moe_index += c.is_moe(l);
  const int T = staged_T_;
  for (int l = first; l < last; ++l) {
    const bool streamed = m_.layout().unit(l).gpu == placement::GpuCopy::Streamed;
    d_->timeline.mark("layer starts", l, d_->stream.get());
    if (streamed) {
      advance_schedule(l);
      d_->timeline.mark("its streamed unit is in", l, d_->stream.get());
    } else if (m_.layout().unit(l).gpu != placement::GpuCopy::Vram)
      throw Error("CUDA K3: layer " + std::to_string(l) + " has no copy on this GPU");
    d_->ran[size_t(l)] = 1;
    run_layer(l, T, nb, moe_index, d_->pass, nullptr, d_->pass_routed);
    d_->timeline.mark("layer ends", l, d_->stream.get());
    if (streamed) {
      d_->consumed[d_->schedule[d_->next_step - 1].slot].record(d_->stream.get());
      advance_schedule(-1);
    }
  }
  if (rs.keep_on_device) {
    // The next range runs on a session that copies the stream from this device: the host copies
    // stay stale (the block count is kept) until stream_to_host.
    rs.blocks.resize(size_t(nb));
    rs.held_by = this;
    d_->stream.sync();
    return;
  }
  download_stream(rs, nb0, nb);
  rs.held_by = nullptr;
}

void CudaK3Session::finish_pass(const ResidualStream& rs, std::vector<float>& logits) {
  const K3Config& c = m_.config();
  const auto& W = m_.weights();
  DeviceScope on(m_.device());
  int nb = 0;
  upload_stream(rs, nb);
  const int T = staged_T_, H = c.hidden;
  const Stream so = d_->stream.opaque();
  const DevMat* head = &W.lm_head;
  const bool streamed = m_.layout().lm_head.gpu == placement::GpuCopy::Streamed;
  d_->timeline.mark("head starts", c.layers, d_->stream.get());
  if (streamed) {
    advance_schedule(c.layers);
    head = &W.stream[size_t(c.layers)].head[d_->schedule[d_->next_step - 1].slot];
  } else if (m_.layout().lm_head.gpu != placement::GpuCopy::Vram) {
    throw Error("CUDA K3: lm_head has no copy on this GPU");
  }
  k3::ResEntries e;
  for (int i = 0; i < nb; ++i) e.p[e.n++] = d_->blocks[i];
  e.p[e.n++] = d_->h;
  k3::attn_res_mix(e, W.output_res, T, H, c.rms_eps, d_->res_scores, d_->mixed, so);
  const int first = d_->pass.all_logits ? 0 : T - 1;
  const int rows = T - first;
  k3::rmsnorm(d_->mixed + size_t(first) * H, H, W.final_norm, H, rows, c.rms_eps, d_->x, H, so);
  k3::gemm(*head, d_->x, H, rows, d_->logits64, c.vocab, so);
  k3::narrow(d_->logits64, d_->logits, int64_t(rows) * c.vocab, so);
  if (streamed) d_->consumed[d_->schedule[d_->next_step - 1].slot].record(d_->stream.get());
  for (int t = 0; t < T; ++t) m_.host().experts().end_token();
  logits.resize(size_t(rows) * c.vocab);
  check_cuda(cudaMemcpyAsync(logits.data(), d_->logits, logits.size() * 4, cudaMemcpyDeviceToHost, d_->stream.get()),
             "cudaMemcpyAsync");
  d_->timeline.mark("logits on the host", c.layers, d_->stream.get());
  d_->stream.sync();
  d_->timeline.report(stderr);
}

void CudaK3Session::attention_kda(int layer, int T, bool partial) {
  const K3Config& c = m_.config();
  const DKda& w = d_->lw[size_t(layer)]->kda;
  KdaDev& k = d_->kda[layer];
  const Stream so = d_->stream.opaque();
  const int C = c.kda_dim(), K = c.conv_kernel, nh = c.kda_heads, dh = c.kda_head_dim;
  const double* x = d_->x;
  const int H = c.hidden;
  // Branches: the decay and beta gates (f_a -> f_b, b), needed by the recurrence; the output gate,
  // needed last. Main: q/k/v, conv, norms.
  const Stream sf = d_->branch(0);
  k3::gemm(w.fa, x, H, T, d_->fa, w.fa.rows, sf);
  k3::gemm(w.fb, d_->fa, w.fa.rows, T, d_->fb, C, sf);
  k3::gemm(w.b, x, H, T, d_->braw, nh, sf);
  k3::kda_gates(d_->fb, w.dt_bias, w.a_log, d_->braw, T, nh, dh, double(c.gate_lower_bound), k.la, k.beta, sf);
  const Stream sg = d_->branch(1);
  k3::gemm(w.g, x, H, T, d_->gate, C, sg);
  k3::gemm(w.qkv, x, H, T, k.raw, 3 * C, so);  // rows land as [T][q | k | v]
  k3::copy(k.conv, k.conv0, int64_t(d_->conv_vals), so);
  if (partial) k3::copy(k.S, k.S0, int64_t(d_->S_vals), so);
  k3::kda_conv(k.conv0, k.raw, T, C, K, w.qc, w.kc, w.vc, k.q, k.k, k.v, so);
  k3::l2norm_heads(k.q, T, nh, dh, 1.0 / std::sqrt(double(dh)), so);
  k3::l2norm_heads(k.k, T, nh, dh, 1.0, so);
  k3::kda_window_after(k.conv0, k.raw, T, C, K, k.conv, so);
  d_->join(0);
  k3::kda_recurrent(k.S, nh, dh, dh, T, k.q, k.k, k.v, k.la, k.beta, d_->o, so);
  d_->join(1);
  k3::kda_out_norm_gate(d_->o, d_->gate, w.o_norm, T, nh, dh, c.rms_eps, so);
  k3::gemm(w.o, d_->o, C, T, d_->a, H, so);
}

void CudaK3Session::attention_mla(int layer, int T) {
  const K3Config& c = m_.config();
  const DMla& w = d_->lw[size_t(layer)]->mla_w;
  const Stream so = d_->stream.opaque();
  const int H = c.hidden, nh = c.mla_heads, R = c.kv_lora_rank, P = c.qk_rope, N = c.qk_nope, Vd = c.v_head;
  const int qh = N + P, width = R + P, ql = c.q_lora_rank;
  double* cache = d_->cache[layer];
  // Branches: the latent cache rows; the output gate. Main: the query.
  const Stream sk = d_->branch(0);
  k3::gemm(w.kv_a, d_->x, H, T, d_->ckv, width, sk);
  // The rows land at n_past read on the device, so a captured pass stays valid as the context grows.
  k3::rmsnorm(d_->ckv, width, w.kv_a_norm, R, T, c.rms_eps, d_->ckv, width, sk);
  k3::rows_to_at(d_->ckv, T, width, cache, d_->n_past, sk);
  k3::gemm(w.q_a, d_->x, H, T, d_->qa, ql, so);
  k3::rmsnorm(d_->qa, ql, w.q_a_norm, ql, T, c.rms_eps, d_->qa, ql, so);
  k3::gemm(w.q_b, d_->qa, ql, T, d_->q, int64_t(nh) * qh, so);
  // The output gate (as many bytes as o_proj) forks only now: it streams while the attention's
  // small kernels, which leave HBM nearly idle, run on the main chain, instead of taking bandwidth
  // from q_a and q_b ahead of them (nsys on the H200, docs/PERFORMANCE.md, session 14).
  if (c.mla_output_gate) k3::gemm(w.g, d_->x, H, T, d_->g, int64_t(nh) * Vd, d_->branch(1));
  k3::mla_absorb_q(d_->q, w.kv_b, T, nh, N, P, Vd, d_->qabs, so);
  d_->join(0);
  const double scale = 1.0 / std::sqrt(double(qh));
  k3::mla_attend_at(d_->qabs, d_->q, cache, d_->n_past, T, nh, N, R, P, scale, d_->scores, m_.options().max_context,
                    d_->olat, so);
  k3::mla_value(d_->olat, w.kv_b, T, nh, N, R, Vd, d_->attn, so);
  if (c.mla_output_gate) {
    d_->join(1);
    k3::mul_sigmoid(d_->attn, d_->g, d_->attn, int64_t(T) * nh * Vd, so);
  }
  k3::gemm(w.o, d_->attn, int64_t(nh) * Vd, T, d_->a, H, so);
}

void CudaK3Session::dense(int layer, bool shared, int T, const double* x, double* out, Stream so) {
  const K3Config& c = m_.config();
  const DLayer& L = *d_->lw[size_t(layer)];
  const DMlp& w = shared ? L.moe_w.shared : L.dense;
  const int64_t I = w.inter;
  k3::gemm(w.gate_up, x, c.hidden, T, d_->mlp_gu, 2 * I, so);
  k3::situ_glu_rows(d_->mlp_gu, T, I, kSituBeta, kSituLinearBeta, d_->mlp_act, so);  // the config's (checked at load)
  k3::gemm(w.down, d_->mlp_act, I, T, out, c.hidden, so);
}

void CudaK3Session::moe(int layer, int moe_index, int T, ForwardTrace* trace, bool routed) {
  const K3Config& c = m_.config();
  const DMoe& w = d_->lw[size_t(layer)]->moe_w;
  const Stream so = d_->stream.opaque();
  const int E = c.experts, k = c.top_k, Z = c.latent, H = c.hidden;
  if (routed) {
    // Every expert is resident: the expert kernel's tables are built from the routing on the
    // device (forward() reads a trace's routing after the pass, from this layer's slot). Branches:
    // the router and the tables; the shared expert. Main: latent_down, then the routed experts once
    // the router has joined.
    int32_t* rid = d_->rid + size_t(moe_index) * T * k;
    double* rw = d_->rw + size_t(moe_index) * T * k;
    const Stream sr = d_->branch(0);
    k3::gemm(w.router, d_->x, H, T, d_->rl, E, sr);
    k3::router_select(d_->rl, w.bias, T, E, k, c.renormalize, double(c.routed_scaling), rid, rw, sr);
    if (w.has_shared) dense(layer, true, T, d_->x, d_->sh, d_->branch(1));
    k3::gemm(w.latent_down, d_->x, H, T, d_->z, Z, so);
    d_->join(0);
    k3::routed_experts(m_.resident_experts(layer), rid, rw, T, k, Z, c.moe_intermediate, d_->z, d_->eh, d_->y, so);
  } else {
    k3::gemm(w.router, d_->x, H, T, d_->rl, E, so);
    k3::router_select(d_->rl, w.bias, T, E, k, c.renormalize, double(c.routed_scaling), d_->rid, d_->rw, so);
    moe_streamed(layer, T, trace);
  }
  if (c.latent_norm) k3::rmsnorm(d_->y, Z, w.latent_norm, Z, T, c.rms_eps, d_->y, Z, so);
  k3::gemm(w.latent_up, d_->y, Z, T, d_->m, H, so);
  if (w.has_shared && routed) d_->join(1);  // forward() adds d_->sh next
}

// The next MoE layer this session computes from the streamed expert tier in a pass of T rows, with
// its router in VRAM (a layer streamed per pass has no router on the device yet); -1 when none or
// no guesses are made (Options::guesses()).
int CudaK3Session::next_prefetch_layer(int layer, int T) const {
  if (!m_.options().guesses()) return -1;
  const K3Config& c = m_.config();
  for (int l = layer + 1; l < c.layers; ++l) {
    if (!c.is_moe(l)) continue;
    const bool here = m_.layout().on_gpu(l, T) && m_.layout().unit(l).gpu == placement::GpuCopy::Vram;
    return here && !m_.resident_experts(l) ? l : -1;
  }
  return -1;
}

// The host must know the routing to supply the experts: read it back, and keep the GPU busy with
// the work that does not depend on it meanwhile.
void CudaK3Session::moe_streamed(int layer, int T, ForwardTrace* trace) {
  const K3Config& c = m_.config();
  const DMoe& w = d_->lw[size_t(layer)]->moe_w;
  const Stream so = d_->stream.opaque();
  cudaStream_t s = d_->stream.get();
  const int k = c.top_k, Z = c.latent, H = c.hidden;
  const size_t n = size_t(T) * k;
  check_cuda(cudaMemcpyAsync(d_->host_rid.as<int32_t>(), d_->rid, n * 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(d_->host_rw.as<double>(), d_->rw, n * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  // The next MoE layer's guess rides along with this layer's routing (one wait for both).
  const int next = next_prefetch_layer(layer, T);
  if (next >= 0) {
    const DMoe& nw = d_->lw[size_t(next)]->moe_w;
    k3::gemm(nw.router, d_->x, H, T, d_->rl_next, c.experts, so);
    k3::router_select(d_->rl_next, nw.bias, T, c.experts, k, c.renormalize, double(c.routed_scaling), d_->rid_next,
                      d_->rw_next, so);
    check_cuda(cudaMemcpyAsync(d_->host_rid_next.as<int32_t>(), d_->rid_next, n * 4, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
    if (m_.options().host_guesses)  // the host tier reads the most confident guesses first
      check_cuda(cudaMemcpyAsync(d_->host_rw_next.as<double>(), d_->rw_next, n * 8, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
  }
  d_->routed.record(s);
  d_->timeline.mark("routing done", layer, s);
  // Work that does not depend on the routing keeps the GPU busy while the host reads it back.
  k3::gemm(w.latent_down, d_->x, H, T, d_->z, Z, so);
  if (w.has_shared) dense(layer, true, T, d_->x, d_->sh, so);
  d_->routed.sync();  // the host needs the routing to supply the experts
  const int32_t* chosen = d_->host_rid.as<int32_t>();
  const double* weight = d_->host_rw.as<double>();
  if (trace) {
    trace->topk_ids.emplace_back(chosen, chosen + n);
    trace->topk_weights.emplace_back(weight, weight + n);
  }
  // The distinct ids of a pass's n routing slots, in id order.
  auto distinct = [n](const int32_t* ids) {
    std::vector<int> v(ids, ids + n);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  const std::vector<int> uni = distinct(chosen);
  m_.experts().gather(layer, uni, d_->experts, so);
  // As soon as this layer's experts are read (the host tier has just asked for them, so it budgets
  // the guess as one layer ahead of it): the disk goes on to the next layer's guessed experts while
  // this layer's copies and kernels run, instead of idling until the next layer's routing. Experts the
  // VRAM tier holds already are left out: the host tier would read them for nothing.
  // The host tier reads guesses in the order given while its budget lasts, so the most confident
  // come first: each expert by its largest routing weight over the pass's rows (the router's top-k
  // comes back in id order).
  if (next >= 0 && m_.options().host_guesses && m_.experts().host().wants_prefetch()) {
    const int32_t* ids = d_->host_rid_next.as<int32_t>();
    const double* wts = d_->host_rw_next.as<double>();
    std::vector<std::pair<double, int>> by_weight;  // (-weight, expert): ascending sort = most confident first
    for (size_t i = 0; i < n; ++i) {
      const int e = ids[i];
      auto it = std::find_if(by_weight.begin(), by_weight.end(), [e](const auto& p) { return p.second == e; });
      if (it == by_weight.end()) by_weight.emplace_back(-wts[i], e);
      else it->first = std::min(it->first, -wts[i]);
    }
    std::sort(by_weight.begin(), by_weight.end());
    std::vector<int> guess;
    for (const auto& [w, e] : by_weight)
      if (!m_.experts().holds(next, e)) guess.push_back(e);
    m_.experts().host().prefetch(next, guess);
  }
  d_->timeline.mark("experts in VRAM", layer, s);
  // The pass's table is the tier's views in id order; each slot holds its expert's index in it. Both
  // travel through pinned buffers the next layer rewrites only after its own routing read-back,
  // which follows these copies on the stream.
  MxExpert* table = d_->host_table.as<MxExpert>();
  std::copy(d_->experts.begin(), d_->experts.end(), table);
  int32_t* slot = d_->host_slot.as<int32_t>();
  for (size_t i = 0; i < n; ++i) slot[i] = int32_t(std::lower_bound(uni.begin(), uni.end(), chosen[i]) - uni.begin());
  check_cuda(cudaMemcpyAsync(d_->table_dev, table, uni.size() * sizeof(MxExpert), cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(d_->slot_dev, slot, n * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  k3::routed_experts(d_->table_dev, d_->slot_dev, d_->rw, T, k, Z, c.moe_intermediate, d_->z, d_->eh, d_->y, so);
  const CudaK3Model::Options& o = m_.options();
  if (next >= 0 && (o.expert_prefetch || (o.expert_prefetch_auto && m_.experts().ahead_worthwhile()))) {
    // Once this layer's experts are queued (the host may wait here for the RAM tier to read a
    // guess from disk; the GPU should not wait with it): into slots this layer does not use, after
    // the work queued so far, so the copies overlap the next layer's attention. By default only
    // guesses already in RAM, so the host never waits for the disk here.
    std::vector<int> guess = distinct(d_->host_rid_next.as<int32_t>());
    if (!o.expert_prefetch) std::erase_if(guess, [&](int e) { return !m_.experts().host().in_memory(next, e); });
    m_.experts().prefetch(next, guess, so);
  }
}

void CudaK3Session::commit(int n) {
  const K3Config& c = m_.config();
  const int T = staged_T_;
  if (T == 0) throw Error("commit() without a staged pass");
  if (n < 0 || n > T) throw Error("commit(" + std::to_string(n) + ") outside 0.." + std::to_string(T));
  if (n < T && !staged_partial_)
    throw Error("partial commit of a pass staged without partial_commit", "stage verify passes with partial_commit");
  if (n < T) {
    DeviceScope on(m_.device());
    const Stream so = d_->stream.opaque();
    const int C = c.kda_dim(), nh = c.kda_heads, dh = c.kda_head_dim;
    for (int l = 0; l < c.layers; ++l) {
      if (c.is_mla[l] || !d_->ran[size_t(l)]) continue;  // a layer the CPU ran (a pass in parts)
      KdaDev& k = d_->kda[l];
      k3::copy(k.S0, k.S, int64_t(d_->S_vals), so);
      if (n > 0) k3::kda_recurrent(k.S, nh, dh, dh, n, k.q, k.k, k.v, k.la, k.beta, d_->o, so);
      k3::kda_window_after(k.conv0, k.raw, n, C, c.conv_kernel, k.conv, so);
    }
    d_->stream.sync();
  }
  n_past_ += n;
  staged_T_ = 0;
  staged_partial_ = false;
}

void CudaK3Session::rollback() {
  if (staged_T_ == 0) return;
  if (!staged_partial_) {
    reset();  // without a snapshot of S the KDA state cannot be restored (as the CPU session)
    return;
  }
  commit(0);
}

std::vector<int32_t> CudaK3Session::greedy(std::span<const int32_t> prompt, int max_new) {
  std::vector<int32_t> out;
  if (max_new <= 0) return out;
  std::vector<float> logits = prefill(prompt);
  const int V = m_.config().vocab;
  for (;;) {
    const int32_t id = static_cast<int32_t>(std::max_element(logits.end() - V, logits.end()) - (logits.end() - V));
    out.push_back(id);
    if (int(out.size()) == max_new) break;
    PassOptions o;
    o.all_logits = false;
    stage(std::span<const int32_t>(&out.back(), 1), logits, o);
    commit(1);
  }
  return out;
}

}  // namespace deltafin::cuda
