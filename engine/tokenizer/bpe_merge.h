#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace deltafin {

struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using BytesToId = std::unordered_map<std::string, int32_t, TransparentStringHash, std::equal_to<>>;

// A byte-level BPE vocabulary in the one form that both tiktoken.model and tokenizer.json
// reduce to. Pieces start as single-byte tokens and the pair with the lowest priority is merged
// first, the leftmost pair on ties, until no adjacent pair can merge.
struct BpeVocab {
  enum class Rule {
    ConcatenationRank,  // tiktoken: a pair merges if its concatenated bytes are a token; priority = that rank
    MergeList,          // tokenizer.json: a pair merges if listed in `merges`; priority = list position
  };
  Rule rule = Rule::ConcatenationRank;
  std::vector<std::string> token_bytes;   // regular tokens by id (specials are kept elsewhere)
  BytesToId ids_by_bytes;                 // inverse of token_bytes
  std::array<int32_t, 256> byte_token{};  // id of each single byte
  struct Merge {
    int32_t priority;
    int32_t merged;
  };
  std::unordered_map<uint64_t, Merge> merges;  // MergeList: (left << 32 | right) -> merge
  // tiktoken returns a piece's own rank when the whole piece is a token, before any merging.
  bool whole_piece_lookup = false;

  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
};

// Appends the ids of one pre-tokenized piece. A binary heap of candidate pairs with lazy
// invalidation keeps this O(n log n) in the piece length, so adversarial long pieces (100k
// characters of one class) stay fast; the result equals the textbook quadratic loop.
void bpe_encode_piece(const BpeVocab& vocab, std::string_view piece, std::vector<int32_t>& out);

}  // namespace deltafin
