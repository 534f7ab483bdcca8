#pragma once
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace deltafin {

// A Hugging Face `tokenizer.json` with a byte-level BPE model (Qwen3 and GPT-2 style): vocab +
// merges, an optional NFC normalizer, a Split(regex, Isolated) + ByteLevel pre-tokenizer (or a
// ByteLevel one with its built-in regex), and added tokens. Other shapes are refused with an
// Error naming the unsupported part, never silently mis-tokenized.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& tokenizer_json_path);

}  // namespace deltafin
