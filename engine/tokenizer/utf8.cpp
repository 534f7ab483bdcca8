#include "tokenizer/utf8.h"

#include <cstdint>

namespace deltafin::utf8 {
namespace {

// For a lead byte: how many continuation bytes follow and the allowed range of the first one
// (the narrower ranges exclude overlong forms, surrogates and code points above U+10FFFF).
struct Lead {
  int continuation = -1;  // -1: not a valid lead byte
  uint8_t lo = 0x80, hi = 0xBF;
};

Lead lead_of(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {};
}

}  // namespace

size_t sanitize_append(std::string_view in, std::string& out, bool keep_incomplete_tail) {
  const auto* s = reinterpret_cast<const uint8_t*>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b = s[i];
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const Lead lead = lead_of(b);
    if (lead.continuation < 0) {
      out.append(kReplacement);
      ++i;
      continue;
    }
    size_t j = i + 1;
    bool broken = false;
    for (int k = 0; k < lead.continuation; ++k, ++j) {
      if (j >= n) break;
      const uint8_t lo = k == 0 ? lead.lo : 0x80, hi = k == 0 ? lead.hi : 0xBF;
      if (s[j] < lo || s[j] > hi) {
        broken = true;
        break;
      }
    }
    if (broken) {
      out.append(kReplacement);  // the valid prefix [i, j) is one maximal subpart
      i = j;
      continue;
    }
    if (j - i < static_cast<size_t>(lead.continuation) + 1) {  // ran out of input
      if (keep_incomplete_tail) return i;
      out.append(kReplacement);
      return n;
    }
    out.append(in.substr(i, j - i));
    i = j;
  }
  return n;
}

std::string sanitize(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  sanitize_append(in, out, false);
  return out;
}

bool is_valid(std::string_view in) { return sanitize(in) == in; }

}  // namespace deltafin::utf8
