#pragma once
// A session whose pass can run in parts, so that one pass's layers can be split between devices
// (placement/split_session.h): the CPU K3Session and the CUDA CudaK3Session both implement it.
// What crosses a layer boundary is the residual stream: the last layer's output and the AttnRes
// block inputs so far (T x hidden values each: kilobytes per row). It is fp64, as the CPU forward
// computes it, so a hand-over between CPU sessions loses nothing; a GPU session rounds it to fp32
// when it takes it and widens its own output.
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/decode_session.h"
#include "runtime/k3_state.h"

namespace deltafin {

class LayerRangeSession;

struct ResidualStream {
  int T = 0;
  std::vector<double> h;                    // [T][hidden]: the embedding before layer 0, then each layer's output
  std::vector<std::vector<double>> blocks;  // the input of every AttnRes block begun so far, [T][hidden] each
  // Between two GPUs the stream need not cross host memory: run_layers may leave its output in its
  // device memory when keep_on_device is set (the next range runs on a session that takes it from
  // there, takes_stream_from). held_by is then that session: h and blocks are stale (blocks.size()
  // still counts the blocks) until its stream_to_host(). Null: h and blocks hold the values.
  bool keep_on_device = false;
  LayerRangeSession* held_by = nullptr;
};

class LayerRangeSession : public DecodeSession {
 public:
  // Stages a pass of ids.size() rows at n_past().. without running any layer (the caller embeds
  // the ids into a ResidualStream). The pass is then run by run_layers over any layer ranges of
  // this session and, on the session that holds lm_head, finish_pass; commit(n) and rollback()
  // end it as they end stage(). commit(n < T) replays only the layers this session ran.
  // opts.trace is not supported in parts (Error).
  virtual void begin_pass(std::span<const int32_t> ids, const PassOptions& opts) = 0;
  // Layers [first, last) of the staged pass: reads and updates rs.h and appends to rs.blocks.
  virtual void run_layers(int first, int last, ResidualStream& rs) = 0;
  // The output AttnRes mix, the final norm and lm_head: logits of the pass's rows (all or the last,
  // as begin_pass's opts.all_logits said).
  virtual void finish_pass(const ResidualStream& rs, std::vector<float>& logits) = 0;
  // Whether run_layers and finish_pass take a stream that `from` left in its device memory
  // (rs.held_by == &from), copying it device to device; sessions on the host take none.
  virtual bool takes_stream_from(const LayerRangeSession& from) const { return false; }
  // Brings a stream this session left in its device memory (rs.held_by == this) into rs.h and
  // rs.blocks, and clears held_by.
  virtual void stream_to_host(ResidualStream& rs) {}
  // One layer's committed state (its KDA recurrence and conv window, or its MLA cache of n_past()
  // rows) moving to another session, when a split forward's decode and prompt passes compute the
  // layer on different devices; never while a pass is staged. export_layer hands the state over in
  // kda and mla, reusing their storage (what this session keeps of the layer is then a
  // placeholder, never read until import_layer gives it a state back); import_layer makes the
  // state in kda and mla this session's and may leave other storage of the right size in them.
  // Only the moving layers cross, once, instead of every layer's state through save_state and
  // load_state (which is what these defaults do, for sessions with nothing better).
  virtual void export_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) {
    K3State st = save_state();
    kda = std::move(st.kda.at(size_t(layer)));
    mla = std::move(st.mla.at(size_t(layer)));
  }
  virtual void import_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) {
    K3State st = save_state();
    st.kda.at(size_t(layer)) = kda;
    st.mla.at(size_t(layer)) = mla;
    load_state(std::move(st));
  }
};

}  // namespace deltafin
