#include "drafts/qwen3_proposer.h"

#include <algorithm>

#include "runtime/ops.h"

namespace deltafin {

namespace {
// K3 ids of history re-checked per proposal: enough to span a word or a number
// on either side of the junction, small enough to keep re-encoding cheap.
constexpr size_t kTailIds = 24;
}  // namespace

std::vector<int32_t> k3_ids_extending(const Tokenizer& k3, std::span<const int32_t> tail,
                                      const std::string& continuation) {
  std::vector<int32_t> out;
  if (continuation.empty()) return out;
  for (int32_t id : tail)
    if (k3.is_special(id)) return out;  // special ids never come back from plain text
  const std::string text = k3.decode(tail);
  if (k3.encode(text) != std::vector<int32_t>(tail.begin(), tail.end())) return out;  // not certified
  const std::vector<int32_t> ext = k3.encode(text + continuation);
  if (ext.size() <= tail.size() || !std::equal(tail.begin(), tail.end(), ext.begin())) return out;
  out.assign(ext.begin() + tail.size(), ext.end());
  return out;
}

Qwen3Proposer::Qwen3Proposer(const Qwen3Model& m, const Tokenizer& k3, const Tokenizer& qwen, int k)
    : host_(&m),
      k3_(k3),
      qwen_(qwen),
      k_(k),
      vocab_(m.config().vocab),
      session_(std::make_unique<Qwen3Session>(m)),
      device_("cpu") {}

Qwen3Proposer::Qwen3Proposer(const Qwen3Backend& b, const Tokenizer& k3, const Tokenizer& qwen, int k)
    : host_(b.host_model()),
      k3_(k3),
      qwen_(qwen),
      k_(k),
      vocab_(b.config().vocab),
      session_(b.session()),
      device_(b.device()) {}

void Qwen3Proposer::propose(std::span<const int32_t> history, int32_t pending, int max_k, std::vector<int32_t>& out) {
  out.clear();
  ids_.assign(history.begin(), history.end());
  ids_.push_back(pending);
  // Qwen reads the whole known history as text; its cache keeps the common prefix.
  std::vector<int32_t> q = qwen_.encode(k3_.decode(ids_));
  if (q.empty()) return;
  std::vector<int32_t> gen;
  try {
    draft(q, max_k, gen);
  } catch (const std::exception& e) {
    // Drafts only change speed: a GPU that fails hands the work to the CPU, from scratch.
    if (std::string(device_) == "cpu" || !host_) throw;
    fallback_ = e.what();
    session_ = std::make_unique<Qwen3Session>(*host_);
    device_ = "cpu";
    cached_.clear();
    gen.clear();
    draft(q, max_k, gen);
  }
  if (gen.empty()) return;
  const size_t tail_n = std::min(kTailIds, ids_.size());
  out = k3_ids_extending(k3_, std::span<const int32_t>(ids_).last(tail_n), qwen_.decode(gen));
  if (static_cast<int>(out.size()) > max_k) out.resize(max_k);
}

void Qwen3Proposer::draft(std::span<const int32_t> q, int max_k, std::vector<int32_t>& gen) {
  size_t common = 0;
  while (common < cached_.size() && common < q.size() && cached_[common] == q[common]) ++common;
  if (common == q.size()) --common;  // at least one row must run to get its logits
  session_->truncate(static_cast<int64_t>(common));
  cached_.assign(q.begin(), q.begin() + common);
  int32_t next = session_->forward_greedy(q.subspan(common));
  cached_.insert(cached_.end(), q.begin() + common, q.end());
  // Greedy Qwen tokens; roughly one per K3 token wanted.
  for (int i = 0; i < max_k; ++i) {
    if (next < 0 || next >= vocab_ || next >= qwen_.vocab_size() || qwen_.is_special(next)) break;
    gen.push_back(next);
    if (i + 1 < max_k) {
      const int32_t one[1] = {next};
      next = session_->forward_greedy(one);
    }
  }
  // Keep the cache at the history: the guesses may be wrong.
  session_->truncate(static_cast<int64_t>(cached_.size()));
}

}  // namespace deltafin
