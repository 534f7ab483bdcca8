#pragma once
// A GPU session behind the DecodeSession interface, owning the device copy of the model it runs on:
// what the CLI (`run`, `generate-ids --device cuda`) and the Studio hand to generate().
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "placement/split_layout.h"
#include "runtime/decode_session.h"

namespace deltafin {
class K3Model;
}

namespace deltafin::cuda {

// Every expert resident in VRAM when they fit, else a VRAM tier as large as the memory allows over
// the model's own RAM and disk tiers (CudaK3Model::Options::kAutoSlots). max_context: the most
// tokens the session will hold. expert_slots > 0 gives the VRAM tier exactly that many slots
// instead (`deltafin bench --vram-experts`: a tier smaller than the model's experts on a GPU that
// would hold them all; every expert is still preloaded when they fit). host_guesses: the next MoE
// layer's guesses also go to the host tier's prefetch (CudaK3Model::Options::host_guesses; the bench's
// `--host-guesses`, so one run can compare both). copies_ahead false: no guessed expert is copied into
// VRAM ahead of its layer (CudaK3Model::Options::expert_prefetch and _auto off; the bench's GPU compute
// floor, whose steps find their experts preloaded and must copy nothing). Throws Error when there is
// no usable GPU or too little memory.
std::unique_ptr<DecodeSession> make_decode_session(const K3Model& model, int64_t max_context, int expert_slots = 0,
                                                   bool host_guesses = false, bool copies_ahead = true);

// A session that follows a placement plan's layout for GPU 0 (placement::split_layout): its VRAM
// units and streamed units on the GPU, the rest on the CPU, each pass split at the layer boundaries
// (placement::SplitSession). The host model must have been loaded with
// placement::host_spine_placement(plan). A failure of the GPU is an error, never a CPU fallback.
std::unique_ptr<DecodeSession> make_split_session(const K3Model& model, int64_t max_context,
                                                  placement::SplitLayout layout);

// A session over several GPUs: GPU g of the layout (its VRAM layers, expert tier and, on GPU 0, the
// units it streams) on CUDA device devices[g], one CudaK3Model and session per GPU, the CPU
// computing what no GPU does; each pass runs its layer ranges in order, the residual stream
// handed from GPU to GPU device to device (peer copies where the devices allow, else through
// pinned host memory). Several entries of `devices` may name one device (logical GPUs imitating a
// multi-GPU machine). names[g] names GPU g in errors. Throws Error when the lists do not match the layout.
std::unique_ptr<DecodeSession> make_multi_gpu_session(const K3Model& model, int64_t max_context,
                                                      placement::DeviceLayout layout, std::vector<int> devices,
                                                      std::vector<std::string> names = {});

}  // namespace deltafin::cuda
