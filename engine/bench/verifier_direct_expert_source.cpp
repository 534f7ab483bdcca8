#include "bench/verifier_direct_expert_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "base/thread_pool.h"
#include "store/mmap_expert_source.h"

namespace deltafin {

namespace {
constexpr uint64_t kAlign = 4096;  // O_DIRECT needs block-aligned offsets, lengths and buffers
}

struct DirectReadExpertSource::Buffer {
  uint8_t* p = nullptr;
  uint64_t cap = 0;
  ~Buffer() { std::free(p); }
  void reserve(uint64_t n) {
    if (n <= cap) return;
    std::free(p);
    p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, n));
    if (!p) throw Error("out of memory for a " + std::to_string(n) + "-byte expert read buffer");
    cap = n;
  }
};

DirectReadExpertSource::DirectReadExpertSource(std::vector<std::string> shard_paths,
                                               std::vector<std::vector<ExpertLocation>> locations)
    : paths_(std::move(shard_paths)), loc_(std::move(locations)) {
  for (const auto& p : paths_) {
    int fd = ::open(p.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) {
      direct_ = false;
      fd = ::open(p.c_str(), O_RDONLY);
    }
    if (fd < 0) throw Error("cannot open " + p + ": " + std::strerror(errno), "check the model folder");
    fds_.push_back(fd);
  }
  if (!direct_)  // one method for all shards, so the numbers mean one thing
    for (size_t i = 0; i < fds_.size(); ++i) {
      ::close(fds_[i]);
      fds_[i] = ::open(paths_[i].c_str(), O_RDONLY);
    }
}

DirectReadExpertSource::~DirectReadExpertSource() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

void DirectReadExpertSource::acquire(int layer, std::span<const int> experts, std::vector<ExpertView>& out) {
  out.assign(experts.size(), ExpertView{});
  while (buffers_.size() < experts.size()) buffers_.push_back(std::make_unique<Buffer>());
  // The pool does not carry exceptions across threads: the first error is kept and rethrown here.
  std::mutex err_mu;
  std::string err;
  ThreadPool::global().parallel_for(experts.size(), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) try {
        const ExpertLocation& L = loc_.at(layer).at(experts[i]);
        uint64_t lo = L.part_offset[0], hi = 0;
        for (int k = 0; k < 6; ++k) {
          lo = std::min(lo, L.part_offset[k]);
          hi = std::max(hi, L.part_offset[k] + L.part_bytes[k]);
        }
        // One read of the span holding all six tensors (they are back to back in the shipped layout).
        const uint64_t a0 = lo / kAlign * kAlign, a1 = (hi + kAlign - 1) / kAlign * kAlign;
        Buffer& buf = *buffers_[i];
        buf.reserve(a1 - a0);
        const int fd = fds_.at(L.shard);
        if (!direct_) ::posix_fadvise(fd, off_t(a0), off_t(a1 - a0), POSIX_FADV_DONTNEED);
        uint64_t done = 0;
        while (done < a1 - a0) {
          const ssize_t n = ::pread(fd, buf.p + done, a1 - a0 - done, off_t(a0 + done));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;  // end of file inside the last aligned block
          done += uint64_t(n);
        }
        if (done < hi - a0)
          throw Error("short read of layer " + std::to_string(layer) + " expert " + std::to_string(experts[i]));
        const uint8_t* base = buf.p - a0;
        ExpertView& v = out[i];
        v.w1_packed = base + L.part_offset[0];
        v.w1_scale = base + L.part_offset[1];
        v.w2_packed = base + L.part_offset[2];
        v.w2_scale = base + L.part_offset[3];
        v.w3_packed = base + L.part_offset[4];
        v.w3_scale = base + L.part_offset[5];
        validate_expert_scales(v, L.part_bytes[1], L.part_bytes[3], layer, experts[i]);
        requests_ += 1;
        bytes_ += hi - lo;
      } catch (const std::exception& ex) {
        std::lock_guard<std::mutex> lk(err_mu);
        if (err.empty()) err = ex.what();
      }
  });
  if (!err.empty()) throw Error(err);
}

ExpertCounters DirectReadExpertSource::counters() const {
  ExpertCounters c;
  c.requests = requests_;
  c.disk_reads = requests_;
  c.bytes_read = bytes_;
  return c;
}

}  // namespace deltafin
