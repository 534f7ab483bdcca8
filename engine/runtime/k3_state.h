#pragma once
#include <cstdint>
#include <vector>

namespace deltafin {

// Everything a K3 session carries between tokens. KDA layers keep a fixed-size
// recurrent state; MLA layers keep the absorbed latent (kv_lora + rope wide) per token.
// In fp64, as the CPU and GPU forwards compute them, so a saved and restored conversation goes on
// with the same bits on either device.
struct KdaLayerState {
  std::vector<double> S;     // [heads][dk][dv]
  std::vector<double> conv;  // [3][K-1][C]: the last K-1 projected q, k, v inputs
};

struct MlaLayerState {
  std::vector<double> cache;  // [tokens][kv_lora + rope]
};

struct K3State {
  std::vector<KdaLayerState> kda;  // indexed by layer; empty for MLA layers
  std::vector<MlaLayerState> mla;  // indexed by layer; empty for KDA layers
  int64_t n_past = 0;
};

// What a staged (uncommitted) pass keeps so that a prefix of its rows can be
// committed later: the KDA state before the pass and each row's recurrence inputs.
struct KdaStagedRows {
  std::vector<double> S0, conv0;                      // state before the pass (partial-commit passes only)
  std::vector<double> q, k, v, log_alpha, beta, raw;  // [T][...] raw = projected q|k|v before the conv
};

struct StagedPass {
  int T = 0;
  bool partial_ok = false;
  std::vector<KdaStagedRows> kda;  // indexed by layer
};

}  // namespace deltafin
