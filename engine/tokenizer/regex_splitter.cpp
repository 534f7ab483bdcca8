#include "tokenizer/regex_splitter.h"

#include <unicode/regex.h>
#include <unicode/utext.h>

#include "base/error.h"

namespace deltafin {
namespace {

// Rust's regex (tiktoken, Hugging Face tokenizers) defines \s as Unicode White_Space, which also
// holds \v and U+0085; ICU's \s does not. Spell it out so ICU matches what made the vocabulary.
std::string rewrite_whitespace_classes(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out.push_back(pattern[i]);
      continue;
    }
    const char next = pattern[++i];
    if (next == 's') out += "\\p{White_Space}";
    else if (next == 'S') out += "\\P{White_Space}";
    else {
      out.push_back('\\');
      out.push_back(next);
    }
  }
  return out;
}

struct UTextCloser {
  void operator()(UText* t) const { utext_close(t); }
};
using UTextPtr = std::unique_ptr<UText, UTextCloser>;

}  // namespace

struct RegexSplitter::Compiled {
  std::unique_ptr<icu::RegexPattern> pattern;
};

RegexSplitter::RegexSplitter(const std::string& pattern) : compiled_(std::make_unique<Compiled>()) {
  const std::string icu_pattern = rewrite_whitespace_classes(pattern);
  UErrorCode status = U_ZERO_ERROR;
  UParseError where{};
  UTextPtr text(utext_openUTF8(nullptr, icu_pattern.data(), static_cast<int64_t>(icu_pattern.size()), &status));
  if (U_SUCCESS(status)) compiled_->pattern.reset(icu::RegexPattern::compile(text.get(), 0, where, status));
  if (U_FAILURE(status) || !compiled_->pattern)
    throw Error("the tokenizer's pre-tokenizer pattern does not compile (" + std::string(u_errorName(status)) +
                    " at offset " + std::to_string(where.offset) + ")",
                "the tokenizer files are damaged or of an unsupported kind");
}

RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces) const {
  if (text.empty()) return;
  UErrorCode status = U_ZERO_ERROR;
  UTextPtr utext(utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status));
  // A matcher per call: RegexMatcher holds match state, so sharing one would not be thread-safe.
  std::unique_ptr<icu::RegexMatcher> matcher(compiled_->pattern->matcher(status));
  if (U_FAILURE(status)) throw Error(std::string("cannot start the pre-tokenizer: ") + u_errorName(status));
  matcher->reset(utext.get());
  // Long single-class runs need a deep backtracking stack; let it grow on the heap instead of
  // failing at ICU's default 8 MB.
  matcher->setStackLimit(0, status);
  size_t covered = 0;
  while (matcher->find(status) && U_SUCCESS(status)) {
    const auto begin = static_cast<size_t>(matcher->start64(status));
    const auto end = static_cast<size_t>(matcher->end64(status));
    if (U_FAILURE(status)) break;
    if (end <= begin) continue;
    if (begin > covered) pieces.emplace_back(covered, begin);
    pieces.emplace_back(begin, end);
    covered = end;
  }
  if (U_FAILURE(status)) throw Error(std::string("the pre-tokenizer failed on this text: ") + u_errorName(status));
  if (covered < text.size()) pieces.emplace_back(covered, text.size());
}

}  // namespace deltafin
