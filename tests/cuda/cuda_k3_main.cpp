// deltafin-cuda-k3: the CUDA K3 checks and measurements for GPU machines without Qt.
//   deltafin-cuda-k3 check <k3-tiny dir> [seed]
//   deltafin-cuda-k3 roofline <file on the disk to measure>
//   deltafin-cuda-k3 layers <model> <context> <reps> <shard for the disk roofline> [T...]
//   deltafin-cuda-k3 verify <model> resident|ram|disk <context> <reps> [T...]
//   deltafin-cuda-k3 stream <model> <ram MB> <vram slots> <warm-up tokens> <tokens> <shard for the disk roofline>
//   deltafin-cuda-k3 placement <model> <reps> <shard for the disk roofline> [rows per expert...]
//   deltafin-cuda-k3 split <k3-tiny dir>   (the forward split between the GPU and the CPU: ids at every split point)
//   deltafin-cuda-k3 hybrid <slice> <k3-real-meta> <prompt len> <new tokens> <reps> <gpu TFLOP/s> GPU_GB:RAM_GB...
//       (plans keeping the real machines' proportions, predicted vs measured; exit 1 when ids differ)
//   deltafin-cuda-k3 multi <k3-tiny dir>   (the forward over two GPUs, or two logical GPUs on one: ids at every split
//   point) deltafin-cuda-k3 multigpu <slice> <prompt len> <new tokens> <reps> <gpu TFLOP/s> [GPUs] [spine share per
//   GPU]
//       (the slice over several GPUs whose budgets each hold less than its spine; exit 1 when ids differ from one GPU)
//   deltafin-cuda-k3 synth <preset> <out dir> [key=value...]   (deltafin synth's checkpoints, for machines without the
//   CLI)
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "cuda/cuda_kernels.h"
#include "bench/hybrid_bench.h"
#include "bench/k3_cuda_bench.h"
#include "cuda_k3_checks.h"
#include "synth/k3_synth.h"

using namespace deltafin;

namespace {
std::vector<int> rows_from(int argc, char** argv, int first) {
  std::vector<int> r;
  for (int i = first; i < argc; ++i) r.push_back(std::atoi(argv[i]));
  if (r.empty()) r = {1, 2, 4, 8};
  return r;
}
int report(const std::vector<cuda::check::Result>& rs) { return cuda::check::print_table(rs); }
}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "synth" && argc >= 4) {
      K3SynthSpec spec = synth_preset(argv[2]);
      for (int i = 4; i < argc; ++i) apply_synth_override(spec, argv[i]);
      write_k3_synth(spec, argv[3]);
      std::printf("wrote %s to %s\n", argv[2], argv[3]);
      return 0;
    }
    std::string why;
    if (!cuda::device_available(&why)) {
      std::fprintf(stderr, "no usable CUDA device: %s\n", why.c_str());
      return 2;
    }
    if (cmd == "check" && argc >= 3) {
      const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
      int bad = report(cuda::check::k3_kernels(seed));
      bad += report(cuda::check::k3_goldens(argv[2]));
      bad += report(cuda::check::k3_transactions(argv[2], seed));
      bad += report(cuda::check::k3_split(argv[2]));
      std::printf("%s\n", bad ? "SOME CHECKS FAILED" : "all checks passed");
      return bad ? 1 : 0;
    }
    if (cmd == "split" && argc >= 3) {
      const int bad = report(cuda::check::k3_split(argv[2]));
      std::printf("%s\n", bad ? "SOME CHECKS FAILED" : "all checks passed");
      return bad ? 1 : 0;
    }
    if (cmd == "multi" && argc >= 3) {
      const int bad = report(cuda::check::k3_multi(argv[2]));
      std::printf("%s\n", bad ? "SOME CHECKS FAILED" : "all checks passed");
      return bad ? 1 : 0;
    }
    if (cmd == "multigpu" && argc >= 7) {
      cuda::MultiGpuBenchOptions o;
      o.slice_root = argv[2];
      o.prompt_len = std::atoi(argv[3]);
      o.new_tokens = std::atoi(argv[4]);
      o.reps = std::atoi(argv[5]);
      o.gpu_tflops = std::atof(argv[6]);
      if (argc > 7) o.gpus = std::atoi(argv[7]);
      if (argc > 8) o.spine_share = std::atof(argv[8]);
      return cuda::bench_multigpu(o, std::cout) ? 0 : 1;
    }
    if (cmd == "hybrid" && argc >= 9) {
      cuda::HybridBenchOptions o;
      o.slice_root = argv[2];
      o.real_meta_root = argv[3];
      o.prompt_len = std::atoi(argv[4]);
      o.new_tokens = std::atoi(argv[5]);
      o.reps = std::atoi(argv[6]);
      o.gpu_tflops = std::atof(argv[7]);
      for (int i = 8; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "no-references") {  // only the machines' rows
          o.references = false;
          continue;
        }
        const auto colon = a.find(':');
        if (colon == std::string::npos)
          throw Error("machine '" + a + "' is not GPU_GB:RAM_GB", "e.g. 24:64, or 0:512 for no GPU");
        o.machines.push_back(
            cuda::HybridMachine{std::atof(a.substr(0, colon).c_str()), std::atof(a.substr(colon + 1).c_str())});
      }
      return cuda::bench_hybrid(o, std::cout) ? 0 : 1;
    }
    if (cmd == "roofline" && argc >= 3) {
      cuda::measure_roofline(argv[2], std::cout);
      return 0;
    }
    if (cmd == "layers" && argc >= 6) {
      const auto roof = cuda::measure_roofline(argv[5], std::cout);
      cuda::bench_layers(argv[2], rows_from(argc, argv, 6), std::atoi(argv[3]), std::atoi(argv[4]), roof, std::cout);
      return 0;
    }
    if (cmd == "verify" && argc >= 6) {
      cuda::bench_verify(argv[2], rows_from(argc, argv, 6), std::atoi(argv[4]), std::atoi(argv[5]), argv[3], std::cout);
      return 0;
    }
    if (cmd == "stream" && argc >= 8) {
      const auto roof = cuda::measure_roofline(argv[7], std::cout);
      cuda::bench_stream(argv[2], std::strtoull(argv[3], nullptr, 10) << 20, std::atoi(argv[4]), std::atoi(argv[5]),
                         std::atoi(argv[6]), roof, std::cout);
      return 0;
    }
    if (cmd == "placement" && argc >= 5) {
      const auto roof = cuda::measure_roofline(argv[4], std::cout);
      cuda::bench_placement(argv[2], rows_from(argc, argv, 5), std::atoi(argv[3]), roof, std::cout);
      return 0;
    }
    std::fprintf(stderr, "usage: see the comment at the top of tests/cuda/cuda_k3_main.cpp\n");
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
