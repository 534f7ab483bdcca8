// The noise of the expert store's queue-depth probe on one disk: several probes in one process, each
// over as many fresh random 2 MiB chunks of the given files as the store's probe reads (O_DIRECT,
// io_uring), each printing its rate per depth and the depth it would pick (store/queue_depth_probe.h).
//   L=build/ci-cuda/lib; g++ -std=c++20 -O2 -I engine tools/bench/queue-depth-sweep.cpp
//   $L/libdeltafin_store.a $L/libdeltafin_base.a -luring -lpthread -o /tmp/qd-sweep (one line)
//   /tmp/qd-sweep 6 MODEL/model-*.safetensors
// RUN=N (environment) shuffles runs of N consecutive chunks instead of single chunks: RUN=8 reads
// expert-sized 16 MiB runs chunk after chunk, the pattern of decode's reads and of the bench's
// O_DIRECT probe, where the store's probe scatters single chunks.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "store/queue_depth_probe.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PROBES FILE...\n", argv[0]);
    return 2;
  }
  const uint64_t chunk = 2 << 20;
  const size_t per_probe = deltafin::queue_depth_probe_chunks();
  std::vector<deltafin::ReadJob> chunks;
  for (int i = 2; i < argc; ++i) {
    const int fd = ::open(argv[i], O_RDONLY | O_CLOEXEC | O_DIRECT);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      std::fprintf(stderr, "cannot open %s with O_DIRECT\n", argv[i]);
      return 1;
    }
    for (uint64_t o = 0; o + chunk <= uint64_t(st.st_size); o += chunk) chunks.push_back({fd, o, chunk, nullptr, 0});
  }
  const char* run_env = std::getenv("RUN");
  const size_t run = std::max(1, run_env ? std::atoi(run_env) : 1);
  std::vector<std::vector<deltafin::ReadJob>> runs;
  for (size_t i = 0; i + run <= chunks.size(); i += run)
    runs.emplace_back(chunks.begin() + long(i), chunks.begin() + long(i + run));
  std::mt19937_64 rng{std::random_device{}()};
  std::shuffle(runs.begin(), runs.end(), rng);
  chunks.clear();
  for (const auto& r : runs) chunks.insert(chunks.end(), r.begin(), r.end());
  const int probes = std::atoi(argv[1]);
  for (int p = 0; p < probes && size_t(p + 1) * per_probe <= chunks.size(); ++p) {
    const std::vector<deltafin::ReadJob> part(chunks.begin() + long(p * per_probe),
                                              chunks.begin() + long((p + 1) * per_probe));
    const deltafin::QueueDepthProbe q = deltafin::probe_queue_depth(part, chunk, true);
    std::printf("probe %d picks QD %d: %s\n", p, q.best, q.describe().c_str());
  }
}
