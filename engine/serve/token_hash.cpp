#include "serve/token_hash.h"

namespace deltafin::serve {

uint64_t extend_token_hash(uint64_t h, int32_t id) {
  const uint32_t v = static_cast<uint32_t>(id);
  for (int b = 0; b < 4; ++b) {
    h ^= (v >> (8 * b)) & 0xffu;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t token_hash(std::span<const int32_t> ids) {
  uint64_t h = kTokenHashSeed;
  for (int32_t id : ids) h = extend_token_hash(h, id);
  return h;
}

std::vector<uint64_t> prefix_hashes(std::span<const int32_t> ids) {
  std::vector<uint64_t> out(ids.size() + 1);
  out[0] = kTokenHashSeed;
  for (size_t i = 0; i < ids.size(); ++i) out[i + 1] = extend_token_hash(out[i], ids[i]);
  return out;
}

}  // namespace deltafin::serve
