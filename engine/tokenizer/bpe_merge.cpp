#include "tokenizer/bpe_merge.h"

#include <optional>
#include <queue>

namespace deltafin {
namespace {

struct Candidate {
  int32_t priority;
  uint32_t left_pos;  // byte offset where the left symbol starts: fixed for the symbol's life
  uint32_t right_pos;
  int32_t left_id, right_id, merged;
  bool operator>(const Candidate& o) const {
    return priority != o.priority ? priority > o.priority : left_pos > o.left_pos;
  }
};

class Merger {
 public:
  Merger(const BpeVocab& vocab, std::string_view piece) : vocab_(vocab) {
    const size_t n = piece.size();
    id_.resize(n);
    next_.resize(n);
    prev_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      id_[i] = vocab.byte_token[static_cast<uint8_t>(piece[i])];
      next_[i] = i + 1 < n ? static_cast<uint32_t>(i + 1) : kNone;
      prev_[i] = i > 0 ? static_cast<uint32_t>(i - 1) : kNone;
    }
    std::vector<Candidate> initial;
    initial.reserve(n);
    for (size_t i = 0; i + 1 < n; ++i)
      if (auto c = candidate(static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1))) initial.push_back(*c);
    heap_ = Heap(std::greater<Candidate>(), std::move(initial));
  }

  void run(std::vector<int32_t>& out) {
    while (!heap_.empty()) {
      const Candidate c = heap_.top();
      heap_.pop();
      // Stale if either side merged since this candidate was made.
      if (dead(c.left_pos) || next_[c.left_pos] != c.right_pos || id_[c.left_pos] != c.left_id ||
          id_[c.right_pos] != c.right_id || dead(c.right_pos))
        continue;
      id_[c.left_pos] = c.merged;
      const uint32_t after = next_[c.right_pos];
      next_[c.left_pos] = after;
      if (after != kNone) prev_[after] = c.left_pos;
      prev_[c.right_pos] = kDead;
      if (prev_[c.left_pos] != kNone)
        if (auto p = candidate(prev_[c.left_pos], c.left_pos)) heap_.push(*p);
      if (after != kNone)
        if (auto p = candidate(c.left_pos, after)) heap_.push(*p);
    }
    for (uint32_t i = 0; i != kNone && i < id_.size(); i = next_[i]) out.push_back(id_[i]);
  }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  static constexpr uint32_t kDead = 0xFFFFFFFEu;
  using Heap = std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>>;

  bool dead(uint32_t pos) const { return prev_[pos] == kDead; }

  std::optional<Candidate> candidate(uint32_t l, uint32_t r) {
    const int32_t a = id_[l], b = id_[r];
    if (vocab_.rule == BpeVocab::Rule::MergeList) {
      auto it = vocab_.merges.find(BpeVocab::pair_key(a, b));
      if (it == vocab_.merges.end()) return std::nullopt;
      return Candidate{it->second.priority, l, r, a, b, it->second.merged};
    }
    concat_.assign(vocab_.token_bytes[a]);
    concat_ += vocab_.token_bytes[b];
    auto it = vocab_.ids_by_bytes.find(std::string_view(concat_));
    if (it == vocab_.ids_by_bytes.end()) return std::nullopt;
    return Candidate{it->second, l, r, a, b, it->second};
  }

  const BpeVocab& vocab_;
  std::vector<int32_t> id_;
  std::vector<uint32_t> next_, prev_;
  Heap heap_;
  std::string concat_;
};

}  // namespace

void bpe_encode_piece(const BpeVocab& vocab, std::string_view piece, std::vector<int32_t>& out) {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    out.push_back(vocab.byte_token[static_cast<uint8_t>(piece[0])]);
    return;
  }
  if (vocab.whole_piece_lookup) {
    auto it = vocab.ids_by_bytes.find(piece);
    if (it != vocab.ids_by_bytes.end()) {
      out.push_back(it->second);
      return;
    }
  }
  Merger(vocab, piece).run(out);
}

}  // namespace deltafin
