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

void choose_queue_depth(QueueDepthProbe& p) {
  if (p.gbps.empty()) {
    p.best = kUsualQueueDepth;
    return;
  }
  double top = 0;
  for (const auto& [d, g] : p.gbps) top = std::max(top, g);
  for (const auto& [d, g] : p.gbps)
    if (g >= 0.95 * top) p.best = std::max(d, kMinQueueDepth);
}

namespace {

// GB/s of `n` reads from chunks[next...] kept `depth` in flight.
double read_at_depth(const std::vector<ReadJob>& chunks, size_t next, int n, int depth, uint64_t chunk_bytes,
                     bool use_io_uring) {
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
  return sec > 0 ? double(got) / sec / 1e9 : 0;
}

}  // namespace

size_t queue_depth_probe_chunks(int max_depth, int per_depth) {
  size_t n = 0;
  for (int depth = 1; depth <= max_depth; depth *= 2) n += 2 * size_t(std::max(per_depth, 2 * depth));
  return n;
}

QueueDepthProbe probe_queue_depth(const std::vector<ReadJob>& chunks, uint64_t chunk_bytes, bool use_io_uring,
                                  int max_depth, int per_depth) {
  // The depths both passes have chunks for.
  std::vector<int> depths;
  for (int depth = 1; depth <= max_depth && queue_depth_probe_chunks(depth, per_depth) <= chunks.size(); depth *= 2)
    depths.push_back(depth);
  std::vector<double> up(depths.size()), down(depths.size());
  size_t next = 0;
  auto pass = [&](size_t i, std::vector<double>& out) {
    const int n = std::max(per_depth, 2 * depths[i]);
    out[i] = read_at_depth(chunks, next, n, depths[i], chunk_bytes, use_io_uring);
    next += size_t(n);
  };
  for (size_t i = 0; i < depths.size(); ++i) pass(i, up);
  for (size_t i = depths.size(); i-- > 0;) pass(i, down);
  QueueDepthProbe p;
  for (size_t i = 0; i < depths.size(); ++i) p.gbps.emplace_back(depths[i], std::max(up[i], down[i]));
  choose_queue_depth(p);
  return p;
}

}  // namespace deltafin
