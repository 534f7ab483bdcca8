#pragma once
// Measurements of the CUDA K3 forward on the machine it runs on (deltafin-cuda-k3 prints them):
// the machine's roofline (disk, PCIe, HBM), per-layer pass times against their byte floor,
// verify-pass costs for T rows with experts resident or streamed, and a decode run with experts
// streamed disk -> RAM tier -> VRAM tier, and where RAM-resident experts are best computed.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace deltafin::cuda {

struct Roofline {
  double disk_gbs = 0;  // O_DIRECT reads of a shard file, 16 MiB requests, 8 in flight
  double h2d_gbs = 0;   // pinned host -> device cudaMemcpyAsync
  double hbm_gbs = 0;   // device -> device copy: (read + written bytes) / time
};
Roofline measure_roofline(const std::string& file_for_disk, std::ostream& log);

// Per layer at T rows: median time over reps vs bytes it must read (spine + distinct experts +
// recurrent state or latent cache) at the measured HBM bandwidth. Experts resident.
void bench_layers(const std::string& model_root, const std::vector<int>& rows, int context, int reps,
                  const Roofline& roof, std::ostream& out);

// stage(T, all logits, partial) + commit(1) per pass, median over reps after one warm-up.
// experts: "resident" (all in VRAM), "ram" (VRAM tier emptied before every pass: copied from host
// memory each pass), "disk" (also read from the shards with O_DIRECT each pass).
void bench_verify(const std::string& model_root, const std::vector<int>& rows, int context, int reps,
                  const std::string& experts, std::ostream& out);

// Greedy decode with experts streamed through both tiers: RAM tier of ram_bytes over the disk,
// VRAM tier of vram_slots. Reports tokens/s, hit rates and bytes per token per tier, and the roofline.
void bench_stream(const std::string& model_root, uint64_t ram_bytes, int vram_slots, int warmup_tokens, int tokens,
                  const Roofline& roof, std::ostream& out);

// Where experts that live in host RAM are best computed: on the CPU (the CPU session's kernels on
// every pool thread) or on the GPU after a copy over PCIe (the VRAM tier's fill, straight from the
// pinned RAM tier and through staging, then the expert kernel), for n experts of one layer with r
// rows each. Prints a table per r and the choice it implies.
void bench_placement(const std::string& model_root, const std::vector<int>& rows, int reps, const Roofline& roof,
                     std::ostream& out);

}  // namespace deltafin::cuda
