#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace deltafin::serve {

// 64-bit FNV-1a over token ids, extendable one id at a time, so the hashes of every prefix of a
// prompt cost one pass. Used to name state snapshots; stored ids are always compared too, so a
// collision costs a miss, never a wrong state.
constexpr uint64_t kTokenHashSeed = 0xcbf29ce484222325ull;
uint64_t extend_token_hash(uint64_t h, int32_t id);
uint64_t token_hash(std::span<const int32_t> ids);
// out[n] = hash of ids[0..n), for n = 0..ids.size().
std::vector<uint64_t> prefix_hashes(std::span<const int32_t> ids);

}  // namespace deltafin::serve
