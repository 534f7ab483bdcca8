#pragma once
// The GPU side of `deltafin bench`'s `--device cuda` arms, in any build: a build without the CUDA
// backend throws the Error that names the flag and says how to get the backend.
#include <cstdint>
#include <memory>

#include "bench/traced_expert_source.h"
#include "runtime/decode_session.h"

namespace deltafin {

class K3Model;

// Whether this build has the CUDA backend (the bench's GPU arms can run where a GPU is usable).
bool bench_cuda_built();

// Throws Error unless a CUDA device is usable (run_bench asks before any arm runs, so that a GPU arm
// on a machine without one fails at once instead of after the CPU arms).
void require_gpu();

// The GPU session `deltafin run --device cuda` opens without a placement plan
// (cuda::make_decode_session): the whole spine in VRAM, the routed experts through a VRAM tier over
// `host`'s expert source (the arm's RAM tier over direct reads). vram_experts > 0 gives that tier
// exactly so many slots; 0: the product's choice (every expert resident when all fit, else as many
// slots as the free memory holds). host_guesses: the GPU's next-layer guesses also go to the RAM
// tier's prefetch (CudaK3Model::Options::host_guesses). copies_ahead false: no guess is copied into
// VRAM ahead of its layer (the compute floor: its trace must record every expert a step asks for,
// and its replay must copy nothing during a step).
std::unique_ptr<DecodeSession> open_gpu_bench_session(const K3Model& host, int64_t max_context, int vram_experts,
                                                      bool host_guesses = false, bool copies_ahead = true);

// Pinned host -> device copy rate of the GPU those sessions run on, in GB/s (cuda::probe_gpu_rates,
// the planner's probe).
double probe_h2d_gbps();

// The GPU compute floor's preload: empties the VRAM tier of a session from open_gpu_bench_session
// and copies `pass`'s experts in (through the host tier), returning once they are in VRAM, so that
// the pass computes with every expert it needs already there. An empty pass only empties the tier.
// Nothing when every expert of the model is resident. Throws Error when the pass needs more experts
// than the tier has slots.
void preload_vram(DecodeSession& session, const PassRequests& pass);

}  // namespace deltafin
