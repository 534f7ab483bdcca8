#include "tokenizer/special_matcher.h"

namespace deltafin {

int32_t SpecialMatcher::child(int32_t node, uint8_t byte) const {
  for (const auto& [b, next] : nodes_[node].children)
    if (b == byte) return next;
  return -1;
}

void SpecialMatcher::add(std::string_view text, int32_t id) {
  if (text.empty()) return;
  first_bytes_.set(static_cast<uint8_t>(text[0]));
  int32_t node = 0;
  for (char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_[node].children.emplace_back(byte, next);
      nodes_.emplace_back();
    }
    node = next;
  }
  if (nodes_[node].id < 0) nodes_[node].id = id;
}

std::optional<SpecialMatcher::Match> SpecialMatcher::find(std::string_view text, size_t from) const {
  for (size_t begin = from; begin < text.size(); ++begin) {
    if (!first_bytes_.test(static_cast<uint8_t>(text[begin]))) continue;
    int32_t node = 0;
    std::optional<Match> best;
    for (size_t i = begin; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      if (nodes_[node].id >= 0) best = Match{begin, i + 1, nodes_[node].id};
    }
    if (best) return best;
  }
  return std::nullopt;
}

}  // namespace deltafin
