#pragma once
// What decoding needs of a target model's session, whichever backend runs the forward: the CPU
// K3Session (runtime/k3_model.h) or the CUDA CudaK3Session (engine/cuda). generate() and the
// speculative verifier work on this interface, so run, generate-ids and the drafters use the GPU
// the same way they use the CPU.
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "runtime/k3_state.h"

namespace deltafin {

class K3Model;

// Optional capture of intermediate results of a pass (goldens, drafters, stats).
struct ForwardTrace {
  bool layer_out = false;                  // capture each layer's returned stream
  std::vector<std::vector<float>> layers;  // [layer][T][hidden]
  // With layer_out64 as well, the same streams unrounded from sessions that compute in fp64 (the
  // CPU's; the precision report); empty otherwise.
  bool layer_out64 = false;
  std::vector<std::vector<double>> layers64;
  bool routing = false;
  std::vector<std::vector<int32_t>> topk_ids;    // [moe layer][T][top_k], ascending ids
  std::vector<std::vector<float>> topk_weights;  // same layout
};

struct PassOptions {
  bool all_logits = true;       // logits for every row, else only the last row
  bool partial_commit = false;  // keep what commit(n < T) needs
  bool chunked_kda = false;     // chunkwise KDA (long prefills; not bit-identical to step form)
  ForwardTrace* trace = nullptr;
};

// The VRAM expert tier of a GPU session, for --stats and the Studio: slots and what the lookups of
// the host-routed passes found (resident passes route on the device and count nothing).
struct VramTierStats {
  int slot_count = 0;  // ("slots" is a Qt macro)
  uint64_t slot_bytes = 0;
  bool all_resident = false;  // every expert of the model in VRAM: no lookup ever copies
  // (layer, expert) of each expert in a VRAM slot now, when not all are resident (the Studio's
  // tier map draws them).
  std::vector<std::pair<int, int>> resident;
  uint64_t requests = 0, hits = 0, misses = 0, bytes_h2d = 0;
  uint64_t direct = 0;      // misses copied straight from the pinned RAM tier (the rest: staging)
  double fill_seconds = 0;  // host wall time spent supplying misses (host tier, staging, copies)
};

// Where the passes of a session split between devices spent their time (placement::SplitSession),
// for --stats: one-row passes (decode) and passes of more rows apart, each by device (index 0 the
// CPU, g + 1 GPU g; what is left of a pass is embedding, hand-overs and set-up), and the layer states
// moved between devices before passes.
struct SplitTimes {
  uint64_t decode_passes = 0, multi_passes = 0;
  double decode_seconds = 0, multi_seconds = 0;
  std::vector<double> decode_device_seconds, multi_device_seconds;
  uint64_t state_moves = 0;  // layers whose state moved
  double state_move_seconds = 0;
  int prefill_from_rows = 2;  // passes of fewer rows compute where decode does

  // Seconds per pass of one kind (one row, else more): each device's, then the rest; empty when no
  // such pass ran.
  std::vector<double> per_pass(bool one_row) const {
    const uint64_t n = one_row ? decode_passes : multi_passes;
    if (n == 0) return {};
    std::vector<double> out = one_row ? decode_device_seconds : multi_device_seconds;
    double rest = one_row ? decode_seconds : multi_seconds;
    for (double& s : out) {
      rest -= s;
      s /= double(n);
    }
    out.push_back(rest / double(n));
    return out;
  }
};

// Transactions over positions: stage() runs T new tokens at n_past()..n_past()+T-1 without
// committing them; commit(n) keeps the first n; rollback() none.
class DecodeSession {
 public:
  virtual ~DecodeSession() = default;
  virtual void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) = 0;
  virtual void commit(int n) = 0;
  virtual void rollback() = 0;
  virtual void reset() = 0;  // back to an empty context
  virtual int64_t n_past() const = 0;
  // The model as loaded on the host: its config, tokenizer-facing ids and expert tiers.
  virtual const K3Model& host_model() const = 0;
  // The most rows one stage() takes (the GPU preallocates for a fixed number); prefill chunks and
  // verify passes are cut to it.
  virtual int max_rows() const = 0;
  // The most tokens the session can hold (a GPU session reserves them when it opens); the CPU
  // session grows as it goes.
  virtual int64_t max_context() const { return std::numeric_limits<int64_t>::max(); }
  // The committed context's state, to resume it later in this or another session of the same
  // model (serve keeps them at turn boundaries, in RAM and on disk). Both backends use the CPU
  // layout (runtime/k3_state.h), so a state saved by one loads in the other. Throws Error while a
  // pass is staged, or (load) when the state does not fit this model.
  virtual K3State save_state() const = 0;
  virtual void load_state(K3State state) = 0;
  // The session's VRAM expert tier; none for the CPU session.
  virtual std::optional<VramTierStats> vram_tier() const { return std::nullopt; }
  // Passes split between devices; none for a session on one device.
  virtual std::optional<SplitTimes> split_times() const { return std::nullopt; }

  // stage + commit of `ids` in chunks of at most min(chunk, max_rows()) rows; the last row's logits.
  std::vector<float> prefill(std::span<const int32_t> ids, int chunk = 64);
};

}  // namespace deltafin
