#pragma once
// One conversation whose passes run split between two sessions at layer boundaries, as a
// SplitLayout says: in practice the CPU K3Session and a CudaK3Session over the same host model.
// Each pass embeds its ids on the host, runs each run of layers on its device (the residual stream
// crosses at every boundary: the hidden state and the AttnRes block inputs, kilobytes per row) and
// lm_head on its device. A layer's state (KDA recurrence, MLA cache) lives on the device that
// computes it; when decode and prefill passes compute a layer on different devices its state
// moves before the pass that needs it elsewhere. Both sessions compute exactly, so the ids are
// those of either alone. A failure on either device ends the pass with an error naming it and
// leaves the session unusable: nothing falls back to the other device.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "placement/split_layout.h"
#include "runtime/layer_range_session.h"

namespace deltafin::placement {

struct SplitStats {
  uint64_t passes = 0;
  uint64_t handovers = 0, handover_bytes = 0;  // residual streams crossing between devices
  uint64_t state_moves = 0;                    // layers whose state moved between devices
};

class SplitSession : public DecodeSession {
 public:
  // `cpu` and `gpu` are sessions over the same host model, both at an empty context; they must
  // outlive this session. gpu_name names the second device in errors ("the GPU").
  SplitSession(LayerRangeSession& cpu, LayerRangeSession& gpu, SplitLayout layout, std::string gpu_name = "the GPU");

  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) override;
  void commit(int n) override;
  void rollback() override;
  void reset() override;
  int64_t n_past() const override { return cpu_.n_past(); }
  const K3Model& host_model() const override { return cpu_.host_model(); }
  int max_rows() const override;
  K3State save_state() const override;
  void load_state(K3State state) override;
  std::optional<VramTierStats> vram_tier() const override { return gpu_.vram_tier(); }

  const SplitLayout& layout() const { return layout_; }
  const SplitStats& stats() const { return stats_; }
  // Which device holds each layer's state now (true: the GPU session).
  const std::vector<bool>& state_on_gpu() const { return state_gpu_; }

 private:
  LayerRangeSession& side(bool gpu) { return gpu ? gpu_ : cpu_; }
  const char* name(bool gpu) const { return gpu ? gpu_name_.c_str() : "the CPU"; }
  void move_states(int T);
  [[noreturn]] void fail(bool gpu, const std::string& where, const std::exception& e);
  void check_usable() const;

  LayerRangeSession& cpu_;
  LayerRangeSession& gpu_;
  SplitLayout layout_;
  std::string gpu_name_;
  std::vector<bool> state_gpu_;
  bool staged_ = false;
  std::string broken_;  // why the session can no longer run (a device failed)
  SplitStats stats_;
};

}  // namespace deltafin::placement
