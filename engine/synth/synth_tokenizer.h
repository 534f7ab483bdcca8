#pragma once
#include <string>

namespace deltafin {

// Writes tiktoken.model (a byte-level BPE of `ranks` entries trained on a small
// built-in multilingual text) and tokenizer_config.json with K3's 256-special layout.
void write_synth_tokenizer(const std::string& out_dir, int ranks);

}  // namespace deltafin
