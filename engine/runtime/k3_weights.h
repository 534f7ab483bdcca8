#pragma once
#include <string>
#include <vector>

#include "model/k3_config.h"
#include "runtime/ops.h"
#include "store/expert_source.h"

namespace deltafin {

class Checkpoint;

struct AttnResWeights {
  std::vector<float> w;  // res_norm.weight * res_proj.weight[0] (a BF16 x BF16 product: exact in fp32)
};

struct KdaWeights {
  Mat q_proj, k_proj, v_proj, g_proj, o_proj, f_a, f_b, b_proj;
  std::vector<float> q_conv, k_conv, v_conv;  // [C][K], oldest tap first
  std::vector<float> a_log;                   // first `heads` entries used
  std::vector<float> dt_bias, o_norm;
};

struct MlaWeights {
  Mat q_a_proj, q_b_proj, kv_a_proj, kv_b_proj, o_proj, g_proj;
  std::vector<float> q_a_norm, kv_a_norm;
};

struct DenseMlpWeights {
  Mat gate, up, down;
};

struct MoeWeights {
  Mat router;                      // [experts][hidden]
  std::vector<float> router_bias;  // e_score_correction_bias
  Mat latent_down, latent_up;      // hidden -> latent, latent -> hidden
  std::vector<float> latent_norm;
  DenseMlpWeights shared;
  bool has_shared = false;
};

struct LayerWeights {
  bool mla = false, moe = false;
  std::vector<float> input_norm, post_attn_norm;
  AttnResWeights attn_res, mlp_res;
  KdaWeights kda;
  MlaWeights mla_w;
  DenseMlpWeights dense;
  MoeWeights moe_w;
};

struct K3Weights {
  Mat embed, lm_head;
  std::vector<float> final_norm;
  AttnResWeights output_res;
  std::vector<LayerWeights> layers;
  std::vector<std::vector<ExpertLocation>> experts;  // [layer][expert]; empty for dense layers
  uint64_t spine_bytes = 0;                          // non-expert bytes the forward reads per token

  // Binds every tensor the forward needs, checking names, dtypes and shapes
  // against the config; throws Error naming the first tensor that does not fit.
  static K3Weights bind(const Checkpoint& ck, const K3Config& cfg);
};

}  // namespace deltafin
