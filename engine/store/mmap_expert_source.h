#pragma once
#include <atomic>
#include <vector>

#include "store/expert_source.h"

namespace deltafin {

class Checkpoint;

// Experts read in place from the memory-mapped shards (the OS page cache is
// the only cache). The simplest tier; the streaming store builds on ExpertSource too.
class MmapExpertSource : public ExpertSource {
 public:
  // locations[layer][expert]; layers without experts have empty rows.
  MmapExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations);
  std::unique_ptr<ExpertBatch> request(int layer, std::span<const int> experts) override;
  ExpertCounters counters() const override;
  std::string describe() const override { return "mmap (page cache)"; }

 private:
  const Checkpoint& ck_;
  std::vector<std::vector<ExpertLocation>> loc_;
  std::vector<std::vector<uint8_t>> checked_;  // E8M0 scales validated once per expert
  std::atomic<uint64_t> requests_{0}, bytes_{0};
};

// Checks an expert's E8M0 scales: 255 encodes NaN and is refused.
void validate_expert_scales(const ExpertView& v, uint64_t w13_scale_bytes, uint64_t w2_scale_bytes, int layer,
                            int expert);

}  // namespace deltafin
