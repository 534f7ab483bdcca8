#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace deltafin {

// Kimi K3's pre-tokenizer (Han runs first, then letter runs with case shape, numbers in
// groups of up to three, punctuation, newlines, spaces). It ships in code, not in the files.
extern const std::string_view kK3PreTokenizerPattern;

// Kimi K3's tokenizer: `tiktoken.model` (lines "base64(bytes) rank", ranks 0..n-1) and the
// 256 specials at ids n..n+255 named in `tokenizer_config.json`'s `added_tokens_decoder`
// (an id with no entry is named <|reserved_token_ID|>).
std::unique_ptr<Tokenizer> load_tiktoken_tokenizer(const std::string& tiktoken_model_path,
                                                   const std::string& tokenizer_config_path);

}  // namespace deltafin
