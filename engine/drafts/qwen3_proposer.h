#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/draft_proposer.h"
#include "drafts/qwen3_model.h"
#include "tokenizer/tokenizer.h"

namespace deltafin {

// Cross-tokenizer step (K3-SPEC.md section 5): `tail` (the last K3 ids of the
// certified history) must round-trip through text; then tail text + the
// drafter's continuation text is re-encoded with K3's tokenizer, and only the
// K3 ids that extend `tail` exactly are proposed (empty when they do not).
std::vector<int32_t> k3_ids_extending(const Tokenizer& k3, std::span<const int32_t> tail,
                                      const std::string& continuation);

// Qwen3-Base drafting for raw completion: the K3 history as text, Qwen3 greedy
// continuation, and back to K3 ids through k3_ids_extending(). On a GPU backend, a
// failing GPU session is replaced by a CPU one (when the backend has host weights).
class Qwen3Proposer : public DraftProposer {
 public:
  Qwen3Proposer(const Qwen3Model& m, const Tokenizer& k3, const Tokenizer& qwen, int k = 4);  // on the CPU
  Qwen3Proposer(const Qwen3Backend& b, const Tokenizer& k3, const Tokenizer& qwen, int k = 4);
  std::string name() const override { return "qwen"; }
  void propose(std::span<const int32_t> history, int32_t pending, int max_k, std::vector<int32_t>& out) override;
  int preferred_k() const override { return k_; }
  // "cpu" or "cuda": where the drafts are computed now.
  const char* device() const { return device_; }
  // Why a GPU session was given up ("" = it was not).
  const std::string& fallback() const { return fallback_; }

 private:
  void draft(std::span<const int32_t> q, int max_k, std::vector<int32_t>& gen);

  const Qwen3Model* host_;
  const Tokenizer& k3_;
  const Tokenizer& qwen_;
  int k_;
  int vocab_;
  std::unique_ptr<Qwen3Runner> session_;
  const char* device_;
  std::string fallback_;
  std::vector<int32_t> cached_;  // Qwen ids whose keys/values the session holds
  std::vector<int32_t> ids_;
};

}  // namespace deltafin
