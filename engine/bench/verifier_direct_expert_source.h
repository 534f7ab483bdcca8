#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "store/expert_source.h"

namespace deltafin {

// Measures the streamed case of the verify-pass benchmark: every acquire reads
// the experts' bytes from the shard files again, bypassing the page cache
// (O_DIRECT; where the filesystem refuses it, pread after dropping the range
// from the page cache). A benchmark tool, not a cache tier.
class DirectReadExpertSource : public ExpertSource {
 public:
  DirectReadExpertSource(std::vector<std::string> shard_paths, std::vector<std::vector<ExpertLocation>> locations);
  ~DirectReadExpertSource() override;
  void acquire(int layer, std::span<const int> experts, std::vector<ExpertView>& out) override;
  ExpertCounters counters() const override;
  std::string describe() const override {
    return direct_ ? "direct reads (O_DIRECT)" : "pread after fadvise(DONTNEED)";
  }

 private:
  struct Buffer;
  std::vector<std::string> paths_;
  std::vector<int> fds_;
  bool direct_ = true;
  std::vector<std::vector<ExpertLocation>> loc_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::atomic<uint64_t> requests_{0}, bytes_{0};
};

}  // namespace deltafin
