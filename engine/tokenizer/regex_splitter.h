#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deltafin {

// The pre-tokenizer: cuts UTF-8 text into pieces with a Unicode regular expression (ICU, so
// \p{Han}, \p{Lu}, set intersection and (?i:...) behave as in the tokenizers that made the
// vocabularies). Pieces are byte ranges of the input; text between matches becomes a piece of
// its own, so every input byte lands in exactly one piece.
class RegexSplitter {
 public:
  // `pattern` in the Rust-regex / Python-regex dialect of tokenizer files. \s and \S are read as
  // Unicode White_Space (as Rust's regex does), not ICU's narrower [\t\n\f\r\p{Z}].
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends [begin, end) byte ranges covering `text` in order.
  void split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace deltafin
