#pragma once
#include <cstdint>

namespace deltafin {

// Where one expert's bytes sit on disk.
struct ExpertLocation {
  uint32_t shard = 0;
  uint64_t offset = 0;           // absolute file offset of the first of the six tensors
  uint64_t bytes = 0;            // span length when contiguous
  bool contiguous = true;        // the six tensors are back to back in w1,w2,w3 packed/scale order
  uint64_t part_offset[6] = {};  // absolute offsets of each tensor (always valid)
  uint64_t part_bytes[6] = {};
};

}  // namespace deltafin
