#pragma once
#include <cstddef>
#include <string>
#include <vector>

// A deterministic corpus of varied strings (scripts, emoji, code, whitespace runs, numbers,
// contractions, combining marks, mixtures) for comparing tokenizers with a reference.
// U+0085 and U+FEFF are left out on purpose: JavaScript's \s (the node references) disagrees
// with Unicode White_Space (Rust/Oniguruma, what Hugging Face uses) on exactly those two.
std::vector<std::string> make_tokenizer_corpus(size_t count, unsigned seed);
