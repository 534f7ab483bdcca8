#include "placement/split_session.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/k3_model.h"

namespace deltafin::placement {

SplitSession::SplitSession(LayerRangeSession& cpu, LayerRangeSession& gpu, SplitLayout layout, std::string gpu_name)
    : cpu_(cpu), gpu_(gpu), layout_(std::move(layout)), gpu_name_(std::move(gpu_name)) {
  const K3Config& c = cpu_.host_model().config();
  if (&gpu_.host_model() != &cpu_.host_model()) throw Error("the two sessions of a split forward run different models");
  layout_.check(c.layers);
  if (cpu_.n_past() != 0 || gpu_.n_past() != 0) throw Error("a split forward starts from two empty sessions");
  state_gpu_.assign(size_t(c.layers), false);
  for (int l = 0; l < c.layers; ++l) state_gpu_[size_t(l)] = layout_.on_gpu(l, 1);  // decode's device: where most passes run
}

int SplitSession::max_rows() const { return std::min(cpu_.max_rows(), gpu_.max_rows()); }

void SplitSession::check_usable() const {
  if (!broken_.empty()) throw Error("this session can no longer run: " + broken_, "start a new session (and check the GPU)");
}

void SplitSession::fail(bool gpu, const std::string& where, const std::exception& e) {
  // Both halves of the pass are dropped; the device that failed may not answer any more.
  try {
    cpu_.rollback();
  } catch (...) {
  }
  try {
    gpu_.rollback();
  } catch (...) {
  }
  staged_ = false;
  broken_ = std::string(name(gpu)) + " failed " + where + ": " + e.what();
  throw Error(broken_, gpu ? "the pass was abandoned; nothing falls back to the CPU (its results could differ): "
                             "check the GPU (nvidia-smi) and start again, or run with --device cpu"
                           : "the pass was abandoned");
}

void SplitSession::move_states(int T) {
  const int L = int(state_gpu_.size());
  std::vector<int> moving;
  for (int l = 0; l < L; ++l)
    if (layout_.on_gpu(l, T) != state_gpu_[size_t(l)]) moving.push_back(l);
  if (moving.empty()) return;
  // Each session holds a full-size state; the layers it does not compute are placeholders. The
  // merged state (each layer from the device that holds it) goes to both, so either now holds
  // every layer's state exactly.
  K3State merged = save_state();
  try {
    cpu_.load_state(merged);
  } catch (const std::exception& e) {
    fail(false, "while taking over layer states", e);
  }
  try {
    gpu_.load_state(std::move(merged));
  } catch (const std::exception& e) {
    fail(true, "while taking over layer states", e);
  }
  for (int l : moving) state_gpu_[size_t(l)] = layout_.on_gpu(l, T);
  stats_.state_moves += moving.size();
}

void SplitSession::stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) {
  check_usable();
  if (staged_) throw Error("a pass is already staged", "commit or roll back before staging another");
  if (opts.trace) throw Error("a split forward takes no trace", "trace with --device cpu or with the whole model on the GPU");
  const K3Model& m = cpu_.host_model();
  const K3Config& c = m.config();
  const int T = int(ids.size());
  if (T == 0) throw Error("stage() called with no tokens");
  if (T > max_rows())
    throw Error("a pass of " + std::to_string(T) + " rows exceeds max_rows " + std::to_string(max_rows()),
                "stage fewer rows per pass (prefill() splits long prompts)");
  for (int32_t id : ids)
    if (id < 0 || id >= c.vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(c.vocab - 1) + ")");
  move_states(T);
  cpu_.begin_pass(ids, opts);
  try {
    gpu_.begin_pass(ids, opts);
  } catch (const std::exception& e) {
    try {
      cpu_.rollback();
    } catch (...) {
    }
    fail(true, "starting a pass", e);
  }
  staged_ = true;
  ResidualStream rs;
  rs.T = T;
  const int H = c.hidden;
  rs.h.resize(size_t(T) * H);
  const Mat& embed = m.weights().embed;
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < H; ++j) rs.h[size_t(t) * H + j] = embed.at(ids[size_t(t)], j);
  bool prev = false;
  bool first = true;
  auto crossing = [&](bool dev) {
    if (!first && dev != prev) {
      ++stats_.handovers;
      stats_.handover_bytes += (rs.h.size() + rs.blocks.size() * rs.h.size()) * sizeof(float);
    }
    first = false;
    prev = dev;
  };
  for (const PassSegment& seg : pass_segments(layout_, T)) {
    crossing(seg.gpu);
    try {
      side(seg.gpu).run_layers(seg.first, seg.last, rs);
    } catch (const std::exception& e) {
      fail(seg.gpu, "in layers " + std::to_string(seg.first) + "-" + std::to_string(seg.last - 1), e);
    }
  }
  const bool head_gpu = layout_.on_gpu(c.layers, T);
  crossing(head_gpu);
  try {
    side(head_gpu).finish_pass(rs, logits);
  } catch (const std::exception& e) {
    fail(head_gpu, "in lm_head", e);
  }
  ++stats_.passes;
}

void SplitSession::commit(int n) {
  check_usable();
  if (!staged_) throw Error("commit() without a staged pass");
  cpu_.commit(n);  // a bad n throws here, before either side has committed
  try {
    gpu_.commit(n);
  } catch (const std::exception& e) {
    fail(true, "committing a pass", e);
  }
  staged_ = false;
}

void SplitSession::rollback() {
  if (!staged_) return;
  try {
    cpu_.rollback();
  } catch (const std::exception& e) {
    fail(false, "rolling back a pass", e);
  }
  try {
    gpu_.rollback();
  } catch (const std::exception& e) {
    fail(true, "rolling back a pass", e);
  }
  staged_ = false;
}

void SplitSession::reset() {
  cpu_.reset();
  try {
    gpu_.reset();
  } catch (const std::exception& e) {
    fail(true, "resetting the session", e);
  }
  staged_ = false;
  broken_.clear();
  for (size_t l = 0; l < state_gpu_.size(); ++l) state_gpu_[l] = layout_.on_gpu(int(l), 1);
}

K3State SplitSession::save_state() const {
  check_usable();
  if (staged_) throw Error("cannot save the state while a pass is staged", "commit or roll back first");
  K3State st = cpu_.save_state();
  bool any = false;
  for (bool g : state_gpu_) any = any || g;
  if (!any) return st;
  K3State g = gpu_.save_state();
  for (size_t l = 0; l < state_gpu_.size(); ++l)
    if (state_gpu_[l]) {
      st.kda[l] = std::move(g.kda[l]);
      st.mla[l] = std::move(g.mla[l]);
    }
  return st;
}

void SplitSession::load_state(K3State state) {
  check_usable();
  if (staged_) throw Error("cannot load a state while a pass is staged", "commit or roll back first");
  cpu_.load_state(state);
  try {
    gpu_.load_state(std::move(state));
  } catch (const Error&) {
    cpu_.reset();  // keep both at one context
    throw;
  }
}

}  // namespace deltafin::placement
