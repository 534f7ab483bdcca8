#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe_merge.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/special_matcher.h"
#include "tokenizer/tokenizer.h"

namespace deltafin {

// Everything a byte-level BPE tokenizer is made of, whichever file it was read from.
struct BpeTokenizerSpec {
  std::string format;  // "tiktoken" or "tokenizer.json"
  BpeVocab vocab;
  struct Special {
    std::string text;
    int32_t id;
  };
  std::vector<Special> specials;  // added tokens; ids must not collide with vocab ids
  std::string pattern;            // pre-tokenizer regex
  bool nfc = false;               // NFC-normalize ordinary text first (tokenizer.json "NFC")
};

// The one implementation behind both K3's tiktoken tokenizer and Qwen3's tokenizer.json:
// [specials split, if allowed] -> [NFC] -> regex pieces -> rank-ordered BPE per piece.
class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeTokenizerSpec spec);

  std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  const std::string& token_bytes(int32_t id) const override;
  std::optional<int32_t> special_id(std::string_view name) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(bytes_by_id_.size()); }
  std::string_view format() const override { return format_; }

 private:
  void encode_ordinary(std::string_view text, std::vector<int32_t>& out) const;

  std::string format_;
  BpeVocab vocab_;
  std::unique_ptr<RegexSplitter> splitter_;
  SpecialMatcher special_matcher_;
  BytesToId special_ids_;
  bool nfc_;
  std::vector<std::string> bytes_by_id_;  // regular and special tokens together
  std::vector<uint8_t> kind_by_id_;       // 0 unused id, 1 regular, 2 special
};

}  // namespace deltafin
