#pragma once
#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deltafin {

// Finds the exact text of special tokens inside a string (only used when a caller allows
// specials). A byte trie gives the leftmost, then longest, match in O(text x longest special).
class SpecialMatcher {
 public:
  void add(std::string_view text, int32_t id);

  struct Match {
    size_t begin, end;
    int32_t id;
  };
  std::optional<Match> find(std::string_view text, size_t from) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;
    int32_t id = -1;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  std::vector<Node> nodes_{Node{}};
  std::bitset<256> first_bytes_;
};

}  // namespace deltafin
