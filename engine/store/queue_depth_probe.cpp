#include "store/queue_depth_probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "base/error.h"

namespace deltafin {

std::string QueueDepthProbe::describe() const {
  std::string s = "QD";
  char buf[48];
  for (size_t i = 0; i < gbps.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s %d %.2f", i ? "," : "", gbps[i].first, gbps[i].second);
    s += buf;
  }
  return s + " GB/s";
}

QueueDepthProbe probe_queue_depth(const std::vector<ReadJob>& chunks, uint64_t chunk_bytes, bool use_io_uring,
                                  int max_depth, int per_depth) {
  QueueDepthProbe p;
  size_t next = 0;
  for (int depth = 1; depth <= max_depth; depth *= 2) {
    const int n = std::max(per_depth, 2 * depth);
    if (next + size_t(n) > chunks.size()) break;
    std::unique_ptr<ReadEngine> eng;
    if (use_io_uring) eng = make_io_uring_engine(depth);
    if (!eng) eng = make_pread_engine(depth);
    const size_t bytes = size_t(depth) * chunk_bytes;
    void* buf = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) throw Error("cannot map " + std::to_string(bytes >> 20) + " MiB for the queue depth probe");
    std::vector<int> free_buf;
    for (int i = depth - 1; i >= 0; --i) free_buf.push_back(i);
    uint64_t got = 0;
    int flying = 0, issued = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (issued < n || flying > 0) {
      while (issued < n && !free_buf.empty()) {
        ReadJob j = chunks[next++];
        ++issued;
        j.bytes = std::min(j.bytes, chunk_bytes);
        j.dst = static_cast<uint8_t*>(buf) + size_t(free_buf.back()) * chunk_bytes;
        j.tag = uint64_t(free_buf.back());
        free_buf.pop_back();
        eng->submit(j);
        ++flying;
      }
      const ReadDone d = eng->wait();
      --flying;
      free_buf.push_back(static_cast<int>(d.tag));
      if (d.result > 0) got += uint64_t(d.result);
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ::munmap(buf, bytes);
    p.gbps.emplace_back(depth, sec > 0 ? got / sec / 1e9 : 0);
  }
  double top = 0;
  for (const auto& [d, g] : p.gbps) top = std::max(top, g);
  for (const auto& [d, g] : p.gbps)
    if (g >= 0.95 * top) {
      p.best = d;
      break;
    }
  return p;
}

}  // namespace deltafin
