#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "runtime/decode_session.h"
#include "runtime/k3_state.h"
#include "runtime/k3_weights.h"
#include "runtime/layer_range_session.h"
#include "runtime/spine_streamer.h"
#include "store/expert_source.h"
#include "store/tiered_expert_source.h"

namespace deltafin {

// A loaded K3-family checkpoint: config, weights bound in place, and the
// source that supplies routed experts. Read-only; sessions hold the state.
class K3Model {
 public:
  struct Options {
    std::unique_ptr<ExpertSource> experts;        // default: the source make_expert_source() picks
    std::optional<StoreOptions> store;            // use the tiered RAM cache with these options
    std::optional<SpinePlacement> spine;          // spine layers in engine RAM or streamed (default: mapped in place)
    std::function<void(const std::string&)> say;  // the load's progress, one line each (the owned spine's)
  };
  static std::unique_ptr<K3Model> load(const std::string& model_root, Options opts);
  static std::unique_ptr<K3Model> load(const std::string& model_root) { return load(model_root, Options{}); }

  const std::string& root() const { return root_; }
  const K3Config& config() const { return cfg_; }
  const K3Weights& weights() const { return w_; }
  const Checkpoint& checkpoint() const { return *ck_; }
  ExpertSource& experts() const { return *experts_; }
  // The spine's owned and streamed units; null when every layer is read in place (mapped).
  SpineStreamer* spine() const { return spine_.get(); }
  // Bytes of MLA latent cache per token (all MLA layers; fp64, as the CPU forward keeps it).
  uint64_t kv_bytes_per_token() const;
  // Bytes of fixed per-session state (KDA recurrent + conv states).
  uint64_t fixed_state_bytes() const;

 private:
  std::string root_;
  K3Config cfg_;
  std::unique_ptr<Checkpoint> ck_;
  K3Weights w_;
  std::unique_ptr<ExpertSource> experts_;
  std::unique_ptr<SpineStreamer> spine_;
};

// Throws Error naming what differs unless `state` is a committed state of a model with config `c`.
void check_state_fits(const K3Config& c, const K3State& state);
// The same for one layer's state at n_past tokens (the part the layer does not have must be empty).
void check_layer_state_fits(const K3Config& c, int layer, const KdaLayerState& kda, const MlaLayerState& mla,
                            int64_t n_past);

// One conversation's state over a K3Model, with transactions: stage() runs T
// new tokens without committing them; commit(n) keeps the first n; rollback() none.
// Every activation, sum and state value is fp64 (weights as stored; logits rounded once to fp32):
// ENGINE.md, "Exactness".
// The routed-expert MLPs of a group of experts, as K3Session runs each group of ready experts: expert
// e over rows [row0[e], row0[e+1]) of xs[][latent], down(SiTU(gate x, up x)) into the same rows of
// d[][latent]; g and u are scratch of as many rows of moe_intermediate values. The group's gates and
// ups take one spread over the pool, its activations one, its downs one.
void routed_expert_group(const K3Config& c, std::span<const ExpertView> views, std::span<const size_t> row0,
                         const double* xs, double* g, double* u, double* d);

// Where the one-row passes (decode steps) of a K3Session spent their time, summed: the attention
// of every layer (with its refined expert guess), the MoE or dense MLP of every layer (with the
// expert requests and waits), the output head (mix, norm, lm_head), and the rest (AttnRes mixes,
// norms, embedding). Wall seconds on the calling thread. passes and total count the one-row passes
// stage() runs whole; a pass run in parts (run_layers, finish_pass) adds to its phases only.
struct DecodePhases {
  int64_t passes = 0;
  double attention = 0, mlp = 0, head = 0, total = 0;
  // Of the passes' time, the matrix ops' (runtime/ops.h op_totals): weight bytes and seconds.
  uint64_t dense_bytes = 0, mxfp4_bytes = 0;
  double dense_seconds = 0, mxfp4_seconds = 0;
  // The worker pool's calls and the caller's wait at their ends (ThreadPool::Stats).
  uint64_t pool_calls = 0;
  double pool_wait_seconds = 0;
};

class K3Session : public LayerRangeSession {
 public:
  explicit K3Session(const K3Model& model);

  // Runs `ids` at positions n_past()..n_past()+T-1. `logits` receives [rows][vocab].
  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts = {}) override;
  void commit(int n) override;
  void rollback() override;
  bool staged() const { return staged_.T > 0; }
  int64_t n_past() const override { return st_.n_past; }
  const K3Model& model() const { return m_; }
  const K3Model& host_model() const override { return m_; }
  int max_rows() const override { return 1 << 30; }

  void reset() override;
  uint64_t state_bytes() const;
  const DecodePhases& decode_phases() const { return phases_; }
  // The committed state, for turn snapshots (engine/serve/state_snapshot.h); load_state throws
  // Error unless every size matches this model.
  K3State save_state() const override;
  void load_state(K3State state) override;
  // A layer's state swapped out of and into this session (no copy of the state itself).
  void export_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) override;
  void import_layer(int layer, KdaLayerState& kda, MlaLayerState& mla) override;
  // A pass in parts (runtime/layer_range_session.h); stage() is begin_pass, every layer, finish_pass.
  void begin_pass(std::span<const int32_t> ids, const PassOptions& opts) override;
  void run_layers(int first, int last, ResidualStream& rs) override;
  void finish_pass(const ResidualStream& rs, std::vector<float>& logits) override;

 private:
  void begin(std::span<const int32_t> ids, const PassOptions& opts);
  void layers(int first, int last, ResidualStream& rs);
  void attention_kda(int layer, const double* x, int T, double* out, const PassOptions& opts);
  void attention_mla(int layer, const double* x, int T, double* out);
  void moe(int layer, const double* x, int T, double* out, ForwardTrace* trace);
  // Guesses `layer`'s experts by applying its router to `x`, an earlier normalized input of the
  // pass, and hands the guess to the expert source's prefetch.
  void predict_experts(int layer, const double* x, int T);
  void dense_mlp(const DenseMlpWeights& w, const double* x, int T, double* out);

  const K3Model& m_;
  const LayerWeights* cur_ = nullptr;  // the weights of the layer being computed (bound or streamed)
  K3State st_;
  StagedPass staged_;
  PassOptions pass_;  // the staged pass's options
  DecodePhases phases_;
};

}  // namespace deltafin
