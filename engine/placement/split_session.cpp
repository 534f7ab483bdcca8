#include "placement/split_session.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "runtime/k3_model.h"

namespace deltafin::placement {

SplitSession::SplitSession(LayerRangeSession& cpu, LayerRangeSession& gpu, SplitLayout layout, std::string gpu_name)
    : SplitSession(cpu, std::vector<LayerRangeSession*>{&gpu}, one_gpu(std::move(layout)), {std::move(gpu_name)}) {}

SplitSession::SplitSession(LayerRangeSession& cpu, std::vector<LayerRangeSession*> gpus, DeviceLayout layout,
                           std::vector<std::string> gpu_names)
    : cpu_(cpu), gpus_(std::move(gpus)), layout_(std::move(layout)), gpu_names_(std::move(gpu_names)) {
  const K3Config& c = cpu_.host_model().config();
  if (gpus_.empty()) throw Error("a split forward needs at least one GPU session");
  if (layout_.gpus.size() != gpus_.size())
    throw Error("the device layout has " + std::to_string(layout_.gpus.size()) + " GPU(s) but " +
                std::to_string(gpus_.size()) + " GPU session(s) were given");
  for (size_t g = gpu_names_.size(); g < gpus_.size(); ++g) gpu_names_.push_back("GPU " + std::to_string(g));
  for (const LayerRangeSession* g : gpus_) {
    if (!g) throw Error("a split forward was given no session for a GPU");
    if (&g->host_model() != &cpu_.host_model()) throw Error("the sessions of a split forward run different models");
    if (g->n_past() != 0) throw Error("a split forward starts from empty sessions");
  }
  layout_.check(c.layers);
  if (cpu_.n_past() != 0) throw Error("a split forward starts from empty sessions");
  stats_.decode_device_seconds.assign(gpus_.size() + 1, 0.0);
  stats_.multi_device_seconds.assign(gpus_.size() + 1, 0.0);
  stats_.prefill_from_rows = layout_.prefill_from_rows;
  state_dev_.assign(size_t(c.layers), kCpu);
  for (int l = 0; l < c.layers; ++l)
    state_dev_[size_t(l)] = layout_.device(l, 1);  // decode's device: where most passes run
}

int SplitSession::max_rows() const {
  int n = cpu_.max_rows();
  for (const LayerRangeSession* g : gpus_) n = std::min(n, g->max_rows());
  return n;
}

int64_t SplitSession::max_context() const {
  int64_t n = cpu_.max_context();
  for (const LayerRangeSession* g : gpus_) n = std::min(n, g->max_context());
  return n;
}

void SplitSession::check_usable() const {
  if (!broken_.empty())
    throw Error("this session can no longer run: " + broken_, "start a new session (and check the GPU)");
}

void SplitSession::rollback_all() noexcept {
  try {
    cpu_.rollback();
  } catch (...) {
  }
  for (LayerRangeSession* g : gpus_) try {
      g->rollback();
    } catch (...) {
    }
}

void SplitSession::fail(int dev, const std::string& where, const std::exception& e) {
  // Every part of the pass is dropped; the device that failed may not answer any more.
  rollback_all();
  staged_ = false;
  broken_ = name(dev) + " failed " + where + ": " + e.what();
  throw Error(broken_, dev != kCpu
                           ? "the pass was abandoned; nothing falls back to the CPU or another GPU (its results could "
                             "differ): check the GPU (nvidia-smi) and start again, or run with --device cpu"
                           : "the pass was abandoned");
}

void SplitSession::move_states(int T) {
  // Only the layers whose device differs for this pass move, each once, from the session that holds
  // its state to the one that computes it; the buffers keep their storage between moves.
  for (int l = 0; l < int(state_dev_.size()); ++l) {
    const int from = state_dev_[size_t(l)], to = layout_.device(l, T);
    if (from == to) continue;
    try {
      side(from).export_layer(l, move_kda_, move_mla_);
    } catch (const std::exception& e) {
      fail(from, "while handing over layer " + std::to_string(l) + "'s state", e);
    }
    try {
      side(to).import_layer(l, move_kda_, move_mla_);
    } catch (const std::exception& e) {
      fail(to, "while taking over layer " + std::to_string(l) + "'s state", e);
    }
    state_dev_[size_t(l)] = to;
    ++stats_.state_moves;
  }
}

void SplitSession::stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) {
  check_usable();
  if (staged_) throw Error("a pass is already staged", "commit or roll back before staging another");
  if (opts.trace)
    throw Error("a split forward takes no trace", "trace with --device cpu or with the whole model on the GPU");
  const K3Model& m = cpu_.host_model();
  const K3Config& c = m.config();
  const int T = int(ids.size());
  if (T == 0) throw Error("stage() called with no tokens");
  if (T > max_rows())
    throw Error("a pass of " + std::to_string(T) + " rows exceeds max_rows " + std::to_string(max_rows()),
                "stage fewer rows per pass (prefill() splits long prompts)");
  for (int32_t id : ids)
    if (id < 0 || id >= c.vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(c.vocab - 1) +
                  ")");
  // Refused here, before any side runs: a side that refused it mid-pass would end the whole session.
  if (n_past() + T > max_context())
    throw Error("the context is full: " + std::to_string(n_past()) + " tokens held, " + std::to_string(T) +
                    " more would pass the " + std::to_string(max_context()) + " this session holds",
                "start a new session, or open it with a larger context");
  using Clock = std::chrono::steady_clock;
  const auto pass_start = Clock::now();
  // Seconds since t, added to device dev's time in passes of this kind (one row or more).
  auto timed = [&](int dev, Clock::time_point t) {
    auto& by_device = T == 1 ? stats_.decode_device_seconds : stats_.multi_device_seconds;
    by_device[size_t(dev + 1)] += std::chrono::duration<double>(Clock::now() - t).count();
  };
  move_states(T);
  stats_.state_move_seconds += std::chrono::duration<double>(Clock::now() - pass_start).count();
  cpu_.begin_pass(ids, opts);
  for (int g = 0; g < int(gpus_.size()); ++g) try {
      gpus_[size_t(g)]->begin_pass(ids, opts);
    } catch (const std::exception& e) {
      fail(g, "starting a pass", e);
    }
  staged_ = true;
  ResidualStream rs;
  rs.T = T;
  const int H = c.hidden;
  rs.h.resize(size_t(T) * H);
  const Mat& embed = m.weights().embed;
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < H; ++j) rs.h[size_t(t) * H + j] = embed.at(ids[size_t(t)], j);
  int prev = kCpu, held_dev = kCpu;
  bool first = true;
  // Before device `dev` runs: the stream is in host memory, or in the device memory of a session
  // that `dev` takes it from.
  auto arrive = [&](int dev) {
    LayerRangeSession& s = side(dev);
    if (!first && dev != prev) {
      ++stats_.handovers;
      stats_.handover_bytes += (rs.h.size() + rs.blocks.size() * rs.h.size()) * sizeof(double);
    }
    if (rs.held_by && rs.held_by != &s) {
      if (s.takes_stream_from(*rs.held_by)) {
        ++stats_.device_handovers;
      } else {
        // A GPU's layers return once queued; this waits for them to finish, so it counts as that
        // device's time, not the hand-over's.
        const auto t = Clock::now();
        try {
          rs.held_by->stream_to_host(rs);
        } catch (const std::exception& e) {
          fail(held_dev, "handing over the residual stream", e);
        }
        timed(held_dev, t);
      }
    }
    first = false;
    prev = dev;
  };
  const std::vector<DeviceSegment> segs = device_segments(layout_, T);
  const int head = layout_.device(c.layers, T);
  for (size_t i = 0; i < segs.size(); ++i) {
    const DeviceSegment& seg = segs[i];
    arrive(seg.device);
    LayerRangeSession& s = side(seg.device);
    const int next = i + 1 < segs.size() ? segs[i + 1].device : head;
    // The stream stays in device memory when the next range (or lm_head) runs on this session or
    // on one that copies it from here.
    rs.keep_on_device = next == seg.device || side(next).takes_stream_from(s);
    const auto t = Clock::now();
    try {
      s.run_layers(seg.first, seg.last, rs);
    } catch (const std::exception& e) {
      fail(seg.device, "in layers " + std::to_string(seg.first) + "-" + std::to_string(seg.last - 1), e);
    }
    timed(seg.device, t);
    if (rs.held_by) held_dev = seg.device;
  }
  arrive(head);
  rs.keep_on_device = false;
  const auto t = Clock::now();
  try {
    side(head).finish_pass(rs, logits);
  } catch (const std::exception& e) {
    fail(head, "in lm_head", e);
  }
  timed(head, t);
  ++stats_.passes;
  const double pass_seconds = std::chrono::duration<double>(Clock::now() - pass_start).count();
  if (T == 1) {
    ++stats_.decode_passes;
    stats_.decode_seconds += pass_seconds;
  } else {
    ++stats_.multi_passes;
    stats_.multi_seconds += pass_seconds;
  }
}

void SplitSession::commit(int n) {
  check_usable();
  if (!staged_) throw Error("commit() without a staged pass");
  cpu_.commit(n);  // a bad n throws here, before any GPU has committed
  for (int g = 0; g < int(gpus_.size()); ++g) try {
      gpus_[size_t(g)]->commit(n);
    } catch (const std::exception& e) {
      fail(g, "committing a pass", e);
    }
  staged_ = false;
}

void SplitSession::rollback() {
  if (!staged_) return;
  try {
    cpu_.rollback();
  } catch (const std::exception& e) {
    fail(kCpu, "rolling back a pass", e);
  }
  for (int g = 0; g < int(gpus_.size()); ++g) try {
      gpus_[size_t(g)]->rollback();
    } catch (const std::exception& e) {
      fail(g, "rolling back a pass", e);
    }
  staged_ = false;
}

void SplitSession::reset() {
  cpu_.reset();
  for (int g = 0; g < int(gpus_.size()); ++g) try {
      gpus_[size_t(g)]->reset();
    } catch (const std::exception& e) {
      fail(g, "resetting the session", e);
    }
  staged_ = false;
  broken_.clear();
  for (size_t l = 0; l < state_dev_.size(); ++l) state_dev_[l] = layout_.device(int(l), 1);
}

std::optional<SplitTimes> SplitSession::split_times() const { return SplitTimes(stats_); }

K3State SplitSession::save_state() const {
  check_usable();
  if (staged_) throw Error("cannot save the state while a pass is staged", "commit or roll back first");
  K3State st = cpu_.save_state();
  for (int g = 0; g < int(gpus_.size()); ++g) {
    if (std::find(state_dev_.begin(), state_dev_.end(), g) == state_dev_.end()) continue;
    K3State gs = gpus_[size_t(g)]->save_state();
    for (size_t l = 0; l < state_dev_.size(); ++l)
      if (state_dev_[l] == g) {
        st.kda[l] = std::move(gs.kda[l]);
        st.mla[l] = std::move(gs.mla[l]);
      }
  }
  return st;
}

void SplitSession::load_state(K3State state) {
  check_usable();
  if (staged_) throw Error("cannot load a state while a pass is staged", "commit or roll back first");
  cpu_.load_state(state);
  try {
    for (LayerRangeSession* g : gpus_) g->load_state(state);
  } catch (const Error&) {
    cpu_.reset();  // keep every session at one context
    for (LayerRangeSession* g : gpus_) try {
        g->reset();
      } catch (...) {
      }
    throw;
  }
}

}  // namespace deltafin::placement
