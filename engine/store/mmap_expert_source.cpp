#include "store/mmap_expert_source.h"

#include <cstring>

#include "base/error.h"
#include "model/checkpoint.h"

namespace deltafin {

MmapExpertSource::MmapExpertSource(const Checkpoint& ck, std::vector<std::vector<ExpertLocation>> locations)
    : ck_(ck), loc_(std::move(locations)) {
  checked_.resize(loc_.size());
  for (size_t l = 0; l < loc_.size(); ++l) checked_[l].assign(loc_[l].size(), 0);
}

void validate_expert_scales(const ExpertView& v, uint64_t w13_scale_bytes, uint64_t w2_scale_bytes, int layer,
                            int expert) {
  auto check = [&](const uint8_t* p, uint64_t n, const char* which) {
    if (std::memchr(p, 0xFF, n))
      throw Error("layer " + std::to_string(layer) + " expert " + std::to_string(expert) + " " + which +
                      " holds the E8M0 NaN scale 255",
                  "the shard is corrupt; verify it with deltafin cache verify or re-download it");
  };
  check(v.w1_scale, w13_scale_bytes, "w1.weight_scale");
  check(v.w3_scale, w13_scale_bytes, "w3.weight_scale");
  check(v.w2_scale, w2_scale_bytes, "w2.weight_scale");
}

std::unique_ptr<ExpertBatch> MmapExpertSource::request(int layer, std::span<const int> experts) {
  std::vector<ExpertView> out;
  const auto& row = loc_.at(layer);
  for (int e : experts) {
    const ExpertLocation& L = row.at(e);
    ExpertView v = view_at(ck_.mapping(L.shard).data(), L);
    if (!checked_[layer][e]) {
      validate_expert_scales(v, L.part_bytes[1], L.part_bytes[3], layer, e);
      checked_[layer][e] = 1;
    }
    out.push_back(v);
    requests_ += 1;
    bytes_ += L.bytes;
  }
  return std::make_unique<ReadyBatch>(std::move(out));
}

ExpertCounters MmapExpertSource::counters() const {
  ExpertCounters c;
  c.requests = requests_;
  c.disk_reads = requests_;
  c.bytes_read = bytes_;
  return c;
}

}  // namespace deltafin
