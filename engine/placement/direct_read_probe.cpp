#include "placement/direct_read_probe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "base/error.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "runtime/k3_weights.h"
#include "store/read_engine.h"

namespace deltafin {

using Clock = std::chrono::steady_clock;

double measure_direct_read_gbps(const std::string& root, int n, int qd, std::string* engine_name, uint32_t seed) {
  auto cfg = K3Config::load(root + "/config.json");
  auto ck = Checkpoint::open(root);
  auto w = K3Weights::bind(*ck, cfg);
  std::vector<const ExpertLocation*> all;
  for (const auto& row : w.experts)
    for (const auto& L : row) all.push_back(&L);
  if (all.empty()) throw Error("no routed experts to read in " + root);
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  n = std::min<int>(n, static_cast<int>(all.size()));
  std::vector<int> fds;
  for (uint32_t s = 0; s < ck->shard_names().size(); ++s) {
    int fd = ::open(ck->shard_path(s).c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0) fd = ::open(ck->shard_path(s).c_str(), O_RDONLY | O_CLOEXEC);
    fds.push_back(fd);
  }
  std::string why;
  auto eng = make_io_uring_engine(qd, &why);
  if (!eng) eng = make_pread_engine(qd);
  if (engine_name) *engine_name = eng->name();
  const uint64_t chunk = 2ull << 20;
  std::vector<ReadJob> jobs;
  for (int i = 0; i < n; ++i) {
    const uint64_t a0 = all[i]->offset & ~4095ull, a1 = (all[i]->offset + all[i]->bytes + 4095) & ~4095ull;
    for (uint64_t o = a0; o < a1; o += chunk)
      jobs.push_back({fds[all[i]->shard], o, std::min(chunk, a1 - o), nullptr, 0});
  }
  const size_t bufbytes = size_t(qd) * chunk;
  void* buf = ::mmap(nullptr, bufbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uint64_t bytes = 0;
  for (int i = 0; i < n; ++i) bytes += all[i]->bytes;
  const auto t0 = Clock::now();
  size_t next = 0;
  int flying = 0;
  std::vector<int> free_slots;
  for (int i = qd - 1; i >= 0; --i) free_slots.push_back(i);
  while (next < jobs.size() || flying > 0) {
    while (next < jobs.size() && !free_slots.empty()) {
      ReadJob j = jobs[next++];
      const int slot = free_slots.back();
      free_slots.pop_back();
      j.dst = static_cast<uint8_t*>(buf) + size_t(slot) * chunk;
      j.tag = uint64_t(slot);
      eng->submit(j);
      ++flying;
    }
    ReadDone d = eng->wait();
    if (d.result < 0) throw Error("bandwidth probe read failed");
    free_slots.push_back(static_cast<int>(d.tag));
    --flying;
  }
  const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  ::munmap(buf, bufbytes);
  for (int fd : fds) ::close(fd);
  return bytes / sec / 1e9;
}

}  // namespace deltafin
