#pragma once
// A GPU session behind the DecodeSession interface, owning the device copy of the model it runs on:
// what the CLI (`run`, `generate-ids --device cuda`) and the Studio hand to generate().
#include <cstdint>
#include <memory>

#include "placement/split_layout.h"
#include "runtime/decode_session.h"

namespace deltafin {
class K3Model;
}

namespace deltafin::cuda {

// Every expert resident in VRAM when they fit, else a VRAM tier as large as the memory allows over
// the model's own RAM and disk tiers (CudaK3Model::Options::kAutoSlots). max_context: the most
// tokens the session will hold. Throws Error when there is no usable GPU or too little memory.
std::unique_ptr<DecodeSession> make_decode_session(const K3Model& model, int64_t max_context);

// A session that follows a placement plan's layout for GPU 0 (placement::split_layout): its VRAM
// units and streamed units on the GPU, the rest on the CPU, each pass split at the layer boundaries
// (placement::SplitSession). The host model must have been loaded with
// placement::host_spine_placement(plan). A failure of the GPU is an error, never a CPU fallback.
std::unique_ptr<DecodeSession> make_split_session(const K3Model& model, int64_t max_context, placement::SplitLayout layout);

}  // namespace deltafin::cuda
