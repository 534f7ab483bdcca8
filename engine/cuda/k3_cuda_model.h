#pragma once
// The K3 forward on one CUDA GPU: the spine weights copied to device memory once, routed experts
// through a VRAM expert tier over the host model's ExpertSource, and a session with the same
// stage / commit(n) / rollback transactions as the CPU K3Session (runtime/k3_model.h). All
// arithmetic is fp32 with batch-invariant kernels: a row's logits do not depend on the other rows
// of its pass. Not bit-identical to the CPU path (different summation trees); compared by tolerance.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cuda/cuda_kernels.h"
#include "placement/split_layout.h"
#include "runtime/k3_model.h"
#include "runtime/layer_range_session.h"

namespace deltafin::cuda {

class VramExpertCache;
struct CudaK3Weights;

class CudaK3Model {
 public:
  struct Options {
    int max_rows = 16;           // most rows of one pass (verify passes; prefill runs in chunks of this)
    int64_t max_context = 4096;  // MLA cache rows per layer
    // VRAM expert slots; 0 = every expert of the model (resident); kAutoSlots = as many as fit in
    // the memory left after the spine, keeping room for one session (every expert when all fit).
    int expert_slots = 0;
    static constexpr int kAutoSlots = -1;
    bool preload = true;  // resident mode: copy every expert in before the first pass
    // A placement plan's units for this GPU (placement/split_layout.h): only its VRAM units are
    // copied in at load, its streamed units are copied per pass into two stream buffers, the
    // others are left to the CPU; the embedding stays on the host. Sessions then run passes in
    // parts (placement::SplitSession). expert_slots 0 means the layout's VRAM expert tier. Unset:
    // the whole spine in VRAM (as a layout with every unit in VRAM).
    std::optional<placement::SplitLayout> layout;
    // The CUDA device this model lives on (an ordinal as cudaSetDevice takes; one GPU of several,
    // or several models on one device imitating several GPUs). Every call into the model and its
    // sessions makes it current for its duration.
    int device = 0;
    // Residual streams handed over from another GPU's session always cross pinned host memory,
    // even where the devices could copy directly (the path of GPUs without peer access, testable
    // on one GPU).
    bool host_handover = false;
    // Streamed expert tier: while a MoE layer's experts compute, the next MoE layer's guessed
    // experts (its router on this layer's input) are copied in, so that copies overlap the GPU's
    // work instead of following it (issue 33; docs/CUDA.md "Copies ahead"). expert_prefetch copies
    // every guess (DELTAFIN_VRAM_PREFETCH=1). expert_prefetch_auto, the default, copies only the
    // guesses the host tier holds in RAM (a guess never waits for the disk) and only while at least
    // half of the recent guesses were used (VramExpertCache::ahead_worthwhile; a wrong guess takes
    // PCIe time ahead of the next layer's misses); DELTAFIN_VRAM_PREFETCH=0 turns both off.
    bool expert_prefetch = false;
    bool expert_prefetch_auto = true;
    // Streamed expert tier over disk reads: the same guess of the next MoE layer's experts also goes
    // to the host tier's prefetch (its RAM tier reads them from disk ahead, asynchronously) as soon
    // as this layer's routing is on the host, so the disk reads the next layer's experts behind this
    // layer's instead of idling under the GPU's work (issue 33, the GPU path). Off: on random
    // routers (36-40 % of the guesses right) it was no faster (docs/history/PERFORMANCE-LOG.md
    // "The GPU's guesses for the disk"); DELTAFIN_GPU_HOST_GUESSES=1 turns it on.
    bool host_guesses = false;
    // Whether a pass computes the next MoE layer's guess at all.
    bool guesses() const { return expert_prefetch || expert_prefetch_auto || host_guesses; }
  };
  CudaK3Model(const K3Model& host, Options opts);
  explicit CudaK3Model(const K3Model& host) : CudaK3Model(host, Options{}) {}
  ~CudaK3Model();
  CudaK3Model(const CudaK3Model&) = delete;
  CudaK3Model& operator=(const CudaK3Model&) = delete;

  const K3Model& host() const { return host_; }
  const K3Config& config() const { return host_.config(); }
  const Options& options() const { return opts_; }
  int device() const { return opts_.device; }
  const CudaK3Weights& weights() const { return *w_; }
  VramExpertCache& experts() const { return *cache_; }
  uint64_t spine_device_bytes() const;
  // Resident mode: device array of every expert of `layer` by id (k3::routed_experts's table),
  // or null when the layer's experts are not all resident (streamed tier, or evicted since).
  const MxExpert* resident_experts(int layer) const;
  // The plan's layout (options().layout) or every unit in VRAM.
  const placement::SplitLayout& layout() const { return layout_; }
  // Whether passes must run in parts: the layout leaves some unit to the CPU or streams it (a
  // layout with every unit in VRAM runs whole passes, CUDA graphs included, with the plan's tier).
  bool split() const { return split_; }
  uint64_t stream_buffer_bytes() const;  // the two device stream buffers together
  uint64_t pinned_spine_bytes() const;   // pinned host copies of the streamed units held in RAM

 private:
  const K3Model& host_;
  Options opts_;
  placement::SplitLayout layout_;
  bool split_ = false;
  std::unique_ptr<CudaK3Weights> w_;
  std::unique_ptr<VramExpertCache> cache_;
};

// Sessions of one model share its VRAM expert tier: use them from one thread at a time.
class CudaK3Session : public LayerRangeSession {
 public:
  explicit CudaK3Session(const CudaK3Model& model);
  ~CudaK3Session();
  CudaK3Session(const CudaK3Session&) = delete;
  CudaK3Session& operator=(const CudaK3Session&) = delete;

  // Same contract as K3Session::stage: rows n_past()..n_past()+T-1, T <= max_rows.
  // opts.chunked_kda is ignored (the step form is used for every pass).
  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts = {}) override;
  void commit(int n) override;
  void rollback() override;
  bool staged() const { return staged_T_ > 0; }
  int64_t n_past() const override { return n_past_; }
  const K3Model& host_model() const override { return m_.host(); }
  int max_rows() const override { return m_.options().max_rows; }
  int64_t max_context() const override { return m_.options().max_context; }
  void reset() override;
  // The committed KDA states and MLA cache rows, copied between device and host memory.
  K3State save_state() const override;
  void load_state(K3State state) override;
  // One layer's state copied out of and into device memory (a split forward's moving layers).
  void export_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) override;
  void import_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) override;
  std::optional<VramTierStats> vram_tier() const override;
  // How residual streams reached this session from another GPU's session: a copy within one
  // device (logical GPUs sharing it), a peer copy (cudaDeviceCanAccessPeer), or through pinned
  // host memory.
  struct HandOvers {
    uint64_t same_device = 0, peer = 0, host = 0;
  };
  const HandOvers& handovers() const { return handovers_; }
  // A pass in parts (runtime/layer_range_session.h): eager, never a CUDA graph. The residual
  // stream crosses host memory at each call; the layers the GPU streams are copied into the stream
  // buffers in the order of placement::stream_schedule, the next one under the current one's compute.
  void begin_pass(std::span<const int32_t> ids, const PassOptions& opts) override;
  void run_layers(int first, int last, ResidualStream& rs) override;
  void finish_pass(const ResidualStream& rs, std::vector<float>& logits) override;
  // Another CUDA session (on this device or another) hands its stream over device to device.
  bool takes_stream_from(const LayerRangeSession& from) const override;
  void stream_to_host(ResidualStream& rs) override;
  // Greedy decoding of up to max_new tokens after `prompt` (first maximum wins, as runtime/sampler).
  std::vector<int32_t> greedy(std::span<const int32_t> prompt, int max_new);
  // Waits for the session's stream (for timing).
  void sync() const;
  // Per-layer GPU time of the last pass (CUDA events around each layer; includes the wait for
  // the routing read-back and expert copies inside the layer in streamed mode). Empty unless
  // enabled; resident passes are timed in their CUDA graphs (the events are graph nodes).
  void set_layer_timing(bool on);
  std::vector<float> layer_ms() const;
  // Whether the last staged pass was a CUDA graph replay (else it ran eagerly).
  bool last_pass_replayed() const;
  const CudaK3Model& model() const { return m_; }

 private:
  struct Impl;
  void forward(int T, const PassOptions& opts, ForwardTrace* tr, bool routed);
  void run_layer(int l, int T, int& nb, int& moe_index, const PassOptions& opts, ForwardTrace* tr, bool routed);
  void check_pass(std::span<const int32_t> ids) const;
  // Layer l's committed state into kda / mla (the part the layer lacks left empty; the vectors keep
  // their storage); the stream must be idle.
  void layer_to_host(int l, KdaLayerState& kda, MlaLayerState& mla) const;
  // Queues layer l's state from kda / mla on the session's stream; the caller waits for the stream
  // (a copy from pageable memory may return before the bytes land, and the non-blocking stream
  // would not wait for it).
  void layer_to_device(int l, const KdaLayerState& kda, const MlaLayerState& mla);
  // The stream schedule's steps up to and including unit u's Compute (u < 0: the copies a pass
  // starts with), then the copies from RAM that follow it.
  void advance_schedule(int u);
  void issue_copy(int step);
  void upload_stream(const ResidualStream& rs, int& nb);
  void download_stream(ResidualStream& rs, int b0, int nb);
  void receive_stream(const CudaK3Session& from, int T, int nb);
  void attention_kda(int layer, int T, bool partial);
  void attention_mla(int layer, int T);
  void moe(int layer, int moe_index, int T, ForwardTrace* trace, bool routed);
  void moe_streamed(int layer, int T, ForwardTrace* trace);
  int next_prefetch_layer(int layer, int T) const;
  void dense(int which_layer, bool shared, int T, const double* x, double* out, Stream so);

  const CudaK3Model& m_;
  std::unique_ptr<Impl> d_;
  int64_t n_past_ = 0;
  int staged_T_ = 0;
  bool staged_partial_ = false;
  HandOvers handovers_;
};

}  // namespace deltafin::cuda
