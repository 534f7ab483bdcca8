#pragma once
// Public tokenizer API of the engine: text in and out exactly as the real models do.
//
//   auto tok = deltafin::load_tokenizer("/models/kimi-k3");   // tiktoken.model or tokenizer.json
//   std::vector<int32_t> ids = tok->encode("Hello");           // special-token text stays text
//   std::string bytes = tok->decode(ids);                      // exact bytes, may end mid-character
//   deltafin::IncrementalDecoder stream(*tok);                 // for generated ids, one at a time:
//   std::string shown = stream.push(id);                       //   only complete UTF-8 comes out
//
// A Tokenizer is immutable after loading; every const method may be called from several
// threads at once.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deltafin {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text (UTF-8 bytes; invalid sequences are tolerated) to ids. With `allow_special` false,
  // text such as "<|end_of_msg|>" is encoded as ordinary characters and can never produce a
  // special id; with it true, the exact text of a special token becomes that token's id.
  virtual std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const = 0;

  // Ids to the exact bytes they stand for (special tokens give their text). The result is not
  // necessarily valid UTF-8 (a slice of ids can end inside a character): use
  // IncrementalDecoder for display. Throws deltafin::Error for an id outside the vocabulary.
  virtual std::string decode(std::span<const int32_t> ids) const = 0;

  // The bytes of one token (a special token's text for a special id). Throws for a bad id.
  virtual const std::string& token_bytes(int32_t id) const = 0;

  // The id of a special (added) token by its text, e.g. "<|end_of_msg|>" or "[BOS]".
  virtual std::optional<int32_t> special_id(std::string_view name) const = 0;
  // Like special_id, but throws deltafin::Error naming the token when it is missing.
  int32_t require_special_id(std::string_view name) const;

  virtual bool is_special(int32_t id) const = 0;

  // Number of ids, specials included (K3: ranks + 256; Qwen3: vocab + added tokens).
  virtual int32_t vocab_size() const = 0;

  // "tiktoken" (K3) or "tokenizer.json" (Hugging Face BPE, e.g. Qwen3).
  virtual std::string_view format() const = 0;
};

// Loads the tokenizer of the model in `model_root`: `tiktoken.model` + `tokenizer_config.json`
// (Kimi K3) when present, else `tokenizer.json` (Qwen3 and other byte-level BPE models).
// Throws deltafin::Error saying which file is missing or malformed.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_root);

// Turns a stream of generated ids into text without ever emitting half a character: bytes of
// an unfinished UTF-8 sequence are held until the ids that complete it arrive. Bytes that can
// never form a character are shown as U+FFFD rather than dropped or passed through broken.
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}

  // The newly completed text (possibly empty). Throws deltafin::Error for a bad id.
  std::string push(int32_t id);
  std::string push(std::span<const int32_t> ids);
  // End of stream: whatever is still held, as U+FFFD.
  std::string finish();
  // Bytes held back waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string drain();
  const Tokenizer* tokenizer_;
  std::string pending_;
};

}  // namespace deltafin
