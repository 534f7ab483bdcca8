// libFuzzer target: the K3 tokenizer on arbitrary bytes. Invariants checked on every input:
// exact byte round trip, no special id unless specials are allowed, and streaming decode that
// only ever emits valid UTF-8 adding up to the sanitized full decode.
// Fixtures: $DELTAFIN_FIXTURES_DIR, else tests/fixtures (fuzz_fixtures.h).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "base/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "fuzz_fixtures.h"

namespace {

const deltafin::Tokenizer& k3() {
  static const std::unique_ptr<deltafin::Tokenizer> tok =
      deltafin::load_tokenizer(deltafin::fuzz::fixtures_dir() + "/k3-tiny");
  return *tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const deltafin::Tokenizer& tok = k3();
  const bool allow_special = data[0] & 1;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<int32_t> ids = tok.encode(text, allow_special);
  if (tok.decode(ids) != text) __builtin_trap();
  if (!allow_special)
    for (int32_t id : ids)
      if (tok.is_special(id)) __builtin_trap();

  deltafin::IncrementalDecoder stream(tok);
  std::string shown;
  for (int32_t id : ids) {
    const std::string chunk = stream.push(id);
    if (!deltafin::utf8::is_valid(chunk)) __builtin_trap();
    shown += chunk;
  }
  shown += stream.finish();
  if (shown != deltafin::utf8::sanitize(text)) __builtin_trap();
  return 0;
}
