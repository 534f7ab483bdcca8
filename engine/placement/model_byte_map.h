#pragma once
// Where a K3-family checkpoint's bytes are, by the unit the placement planner moves: one spine
// layer, the embedding, lm_head, the small head tensors, and the routed experts. Built from
// config.json (shapes and the shipped dtypes) so that it works on the real index with no weights,
// or from the safetensors headers of an installed checkpoint (exact sizes).
#include <cstdint>
#include <string>
#include <vector>

#include "model/k3_config.h"

namespace deltafin {
class Checkpoint;
struct CheckpointIndex;
}  // namespace deltafin

namespace deltafin::placement {

// What a tensor is to the planner.
enum class TensorRole {
  Matrix,  // a spine matrix read by every pass: the bytes a layer streams
  Router,  // a MoE router: kept resident in RAM even when its layer streams (lookahead reads it early)
  Small,   // norms, gates, conv taps: widened to fp32 once at load and always resident
  Expert,  // one of a routed expert's six MXFP4 tensors
};

// Unit of placement: a spine layer (0..layers-1), or one of these.
constexpr int kEmbedUnit = -1;   // embedding: one row per token is read, never streamed
constexpr int kLmHeadUnit = -2;  // lm_head: read whole by every pass
constexpr int kHeadUnit = -3;    // final norm and output AttnRes (small)

struct TensorBytes {
  std::string name;  // full name as in the checkpoint ("language_model." included when it has it)
  uint64_t bytes = 0;
  uint64_t numel = 0;  // elements (a matrix's multiply-adds per row)
  TensorRole role = TensorRole::Matrix;
  int unit = 0;  // layer index or one of the k*Unit values
};

// Every text tensor the engine reads, with its size from the config and the dtypes Moonshot ships
// (BF16, except F32 for the KDA conv taps, A_log, dt_bias, o_norm and the router bias; U8 experts).
// `prefix` is "language_model." for the released layout.
std::vector<TensorBytes> k3_text_tensors(const K3Config& c, const std::string& prefix);

struct LayerBytes {
  int layer = 0;
  bool mla = false, moe = false;
  uint64_t matrix_bytes = 0;   // streamed per pass when the layer is not resident
  uint64_t router_bytes = 0;   // resident in RAM always (MoE layers)
  uint64_t small_bytes = 0;    // resident in RAM always (as stored; widened to fp32 at load)
  uint64_t flops_per_row = 0;  // multiply-adds x 2 of the layer's matrices for one row
};

struct ModelByteMap {
  std::vector<LayerBytes> layers;
  uint64_t embed_bytes = 0, lm_head_bytes = 0, head_small_bytes = 0;
  uint64_t lm_head_flops_per_row = 0;
  bool tied_embeddings = false;
  uint64_t expert_bytes = 0;  // one routed expert (six tensors)
  int experts = 0, top_k = 0, moe_layers = 0;
  uint64_t expert_flops_per_row = 0;
  // A session's state, fp64 on the CPU and the GPU alike (both forwards keep every value in fp64).
  uint64_t kv_bytes_per_token = 0;  // MLA latent cache, all MLA layers
  uint64_t fixed_state_bytes = 0;   // KDA recurrent and conv states of one session
  // One session's state for `context` tokens.
  uint64_t state_bytes(int64_t context) const {
    return fixed_state_bytes + kv_bytes_per_token * uint64_t(context > 0 ? context : 0);
  }
  int hidden = 0, vocab = 0;

  // Every non-expert byte of the text model (layers, embedding, lm_head, head).
  uint64_t spine_bytes() const;
  // Spine bytes one pass reads: every layer's matrices and routers, lm_head (the embedding's rows
  // are negligible and are left out).
  uint64_t spine_bytes_per_pass() const;
  uint64_t all_expert_bytes() const { return uint64_t(experts) * moe_layers * expert_bytes; }
  // Largest streamable unit (a layer's matrices or lm_head): what one stream buffer must hold.
  uint64_t largest_unit_bytes() const;
  uint64_t resident_small_bytes() const;  // routers + small tensors of every layer + head

  // From the config alone, with the shipped dtypes.
  static ModelByteMap from_config(const K3Config& c);
  // From the shards' headers: every tensor's real size; throws Error naming a missing tensor.
  static ModelByteMap from_checkpoint(const Checkpoint& ck, const K3Config& c);
  // For a model folder: from the shards' headers when they are there, else from config.json alone
  // (`note` then says so).
  static ModelByteMap for_model_root(const std::string& root, std::string* note = nullptr);
  // From the tensor list (either of the above builds one).
  static ModelByteMap from_tensors(const K3Config& c, const std::vector<TensorBytes>& tensors);
};

// The checkpoint's tensor-name prefix: "language_model." when its embedding is named so, else "".
std::string text_prefix(const Checkpoint& ck);

}  // namespace deltafin::placement
