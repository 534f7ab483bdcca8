#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace deltafin {

std::string IncrementalDecoder::push(int32_t id) {
  pending_ += tokenizer_->token_bytes(id);
  return drain();
}

std::string IncrementalDecoder::push(std::span<const int32_t> ids) {
  for (int32_t id : ids) pending_ += tokenizer_->token_bytes(id);
  return drain();
}

std::string IncrementalDecoder::drain() {
  std::string out;
  const size_t used = utf8::sanitize_append(pending_, out, /*keep_incomplete_tail=*/true);
  pending_.erase(0, used);
  return out;
}

std::string IncrementalDecoder::finish() {
  std::string out = utf8::sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace deltafin
