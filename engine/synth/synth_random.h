#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

// Counter-based random values for synthesized checkpoints: value i of a tensor
// depends only on (seed, name, i), so any chunk of a huge tensor can be made
// on its own and the same seed always gives the same bytes.
namespace deltafin::synth_random {

inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
inline float uniform01(uint64_t key, uint64_t i) { return (splitmix(key ^ splitmix(i)) >> 40) * (1.0f / 16777216.0f); }
inline float normal(uint64_t key, uint64_t i) {
  const float u1 = std::max(uniform01(key, 2 * i), 1e-7f), u2 = uniform01(key, 2 * i + 1);
  return std::sqrt(-2.f * std::log(u1)) * std::cos(6.2831853f * u2);
}

}  // namespace deltafin::synth_random
