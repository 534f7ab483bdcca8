#pragma once
#include <cstddef>
#include <string>
#include <string_view>

// UTF-8 helpers shared by decoding, streaming and the chat parser. Invalid input is never
// an error here: streaming output must keep going, so broken sequences become U+FFFD.
namespace deltafin::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Appends to `out` the valid text of `in`, replacing each maximal invalid subpart with U+FFFD
// (the WHATWG/Unicode "maximal subpart" rule). When `keep_incomplete_tail` is set, a trailing
// sequence that is still a valid prefix of a character is not emitted; the number of bytes
// consumed is returned so the caller can keep the tail for later.
size_t sanitize_append(std::string_view in, std::string& out, bool keep_incomplete_tail);

// `in` as valid UTF-8 (U+FFFD for broken sequences, including an unfinished tail).
std::string sanitize(std::string_view in);

bool is_valid(std::string_view in);

}  // namespace deltafin::utf8
