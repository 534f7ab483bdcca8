#pragma once
// One conversation whose passes run split between sessions at layer boundaries, as a SplitLayout
// (one GPU) or a DeviceLayout (several) says: in practice the CPU K3Session and one CudaK3Session
// per GPU over the same host model. Each pass embeds its ids on the host, runs each run of layers
// on its device (the residual stream crosses at every boundary: the hidden state and the AttnRes
// block inputs, kilobytes per row; from GPU to GPU it is copied device to device when the next
// session takes it, takes_stream_from) and lm_head on its device. A layer's state (KDA recurrence, MLA cache) lives on
// the device that computes it; when decode and prefill passes compute a layer on different devices its state moves
// before the pass that needs it elsewhere. Both sessions compute exactly, so the ids are those of either alone. A
// failure on either device ends the pass with an error naming it and leaves the session unusable: nothing falls back to
// the other device.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "placement/split_layout.h"
#include "runtime/layer_range_session.h"

namespace deltafin::placement {

// The times of SplitTimes (runtime/decode_session.h: one-row passes and passes of more rows, each
// by device; lm_head counts as its device's, and so does the wait for a GPU's queued layers when the
// residual stream comes back to the host; state moves are part of the passes' times), and the
// hand-overs of the residual stream.
struct SplitStats : SplitTimes {
  uint64_t passes = 0;
  uint64_t handovers = 0, handover_bytes = 0;  // residual streams crossing between devices
  uint64_t device_handovers = 0;               // of which copied device to device (GPU to GPU)
};

class SplitSession : public DecodeSession {
 public:
  // `cpu` and `gpu` are sessions over the same host model, both at an empty context; they must
  // outlive this session. gpu_name names the second device in errors ("the GPU").
  SplitSession(LayerRangeSession& cpu, LayerRangeSession& gpu, SplitLayout layout, std::string gpu_name = "the GPU");
  // Several GPUs: gpus[g] computes what layout.gpus[g] says; gpu_names[g] names it in errors
  // (default "GPU g"). Every session is over the same host model at an empty context.
  SplitSession(LayerRangeSession& cpu, std::vector<LayerRangeSession*> gpus, DeviceLayout layout,
               std::vector<std::string> gpu_names = {});

  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) override;
  void commit(int n) override;
  void rollback() override;
  void reset() override;
  int64_t n_past() const override { return cpu_.n_past(); }
  const K3Model& host_model() const override { return cpu_.host_model(); }
  int max_rows() const override;
  int64_t max_context() const override;  // the smallest of its sessions'

  K3State save_state() const override;
  void load_state(K3State state) override;
  // GPU 0's tier (the one a one-GPU plan has; each GPU has its own: session_of_gpu(g).vram_tier()).
  std::optional<VramTierStats> vram_tier() const override { return gpus_.front()->vram_tier(); }
  std::optional<SplitTimes> split_times() const override;

  const DeviceLayout& layout() const { return layout_; }
  const SplitStats& stats() const { return stats_; }
  // Which device holds each layer's state now (kCpu or a GPU index).
  const std::vector<int>& state_device() const { return state_dev_; }
  int gpu_count() const { return int(gpus_.size()); }
  LayerRangeSession& session_of_gpu(int g) const { return *gpus_.at(size_t(g)); }

 private:
  LayerRangeSession& side(int dev) const { return dev == kCpu ? cpu_ : *gpus_.at(size_t(dev)); }
  std::string name(int dev) const { return dev == kCpu ? std::string("the CPU") : gpu_names_.at(size_t(dev)); }
  void move_states(int T);
  [[noreturn]] void fail(int dev, const std::string& where, const std::exception& e);
  void check_usable() const;
  void rollback_all() noexcept;

  LayerRangeSession& cpu_;
  std::vector<LayerRangeSession*> gpus_;
  DeviceLayout layout_;
  std::vector<std::string> gpu_names_;
  std::vector<int> state_dev_;
  KdaLayerState move_kda_;  // a moving layer's state between export and import (storage reused)
  MlaLayerState move_mla_;
  bool staged_ = false;
  std::string broken_;  // why the session can no longer run (a device failed)
  SplitStats stats_;
};

}  // namespace deltafin::placement
