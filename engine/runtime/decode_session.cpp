#include "runtime/decode_session.h"

#include <algorithm>

namespace deltafin {

std::vector<float> DecodeSession::prefill(std::span<const int32_t> ids, int chunk) {
  const size_t step = static_cast<size_t>(std::max(1, std::min(chunk, max_rows())));
  std::vector<float> logits;
  for (size_t i = 0; i < ids.size(); i += step) {
    const size_t n = std::min(step, ids.size() - i);
    PassOptions o;
    o.all_logits = false;
    stage(ids.subspan(i, n), logits, o);
    commit(static_cast<int>(n));
  }
  return logits;
}

}  // namespace deltafin
