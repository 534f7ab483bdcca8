// libFuzzer target: the safetensors header parser must reject any byte string
// cleanly (an Error), never crash, read out of bounds or hang.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Treat the input as a whole file, and also as the prefix of a larger file.
  for (uint64_t file_size : {static_cast<uint64_t>(size), static_cast<uint64_t>(size) + 4096}) {
    try {
      auto h = deltafin::SafetensorsHeader::parse(data, size, file_size, "fuzz");
      for (const auto& t : h.tensors)
        if (t.end > file_size - h.data_start) __builtin_trap();  // parser promised bounds
    } catch (const deltafin::Error&) {
    }
  }
  return 0;
}
