#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/expert_source.h"

namespace deltafin {

// One forward pass's expert requests, in order: (layer, experts).
using PassRequests = std::vector<std::pair<int, std::vector<int>>>;

// An expert source that passes everything through to another and writes down what each pass
// asked for, so that a later run of the same workload can have a pass's experts in RAM before
// the pass runs (the bench's compute floor: the same compute with no read to wait for).
class TracedExpertSource : public ExpertSource {
 public:
  explicit TracedExpertSource(std::unique_ptr<ExpertSource> inner) : inner_(std::move(inner)) {
    passes_.emplace_back();
  }

  std::unique_ptr<ExpertBatch> request(int layer, std::span<const int> experts) override;
  // Guesses fetched ahead are not the pass's demand: passed on, not recorded.
  std::unique_ptr<ExpertBatch> request_ahead(int layer, std::span<const int> experts) override {
    return inner_->request_ahead(layer, experts);
  }
  bool in_memory(int layer, int expert) const override { return inner_->in_memory(layer, expert); }
  bool reports_in_memory() const override { return inner_->reports_in_memory(); }
  void prefetch(int layer, std::span<const int> experts) override { inner_->prefetch(layer, experts); }
  bool wants_prefetch() const override { return inner_->wants_prefetch(); }
  int prefetch_layers() const override { return inner_->prefetch_layers(); }
  void end_token() override { inner_->end_token(); }
  HostArena host_arena() const override { return inner_->host_arena(); }
  ExpertCounters counters() const override { return inner_->counters(); }
  std::string describe() const override { return inner_->describe(); }

  // Starts a new entry: what follows belongs to the next pass.
  void cut() { passes_.emplace_back(); }
  // The requests recorded so far, one entry per cut() plus the first.
  const std::vector<PassRequests>& passes() const { return passes_; }
  // Asks the inner source for every expert of `pass` and lets them go again, so that a source
  // whose cache holds them serves the pass itself from RAM. Not recorded.
  void preload(const PassRequests& pass);

 private:
  std::unique_ptr<ExpertSource> inner_;
  std::vector<PassRequests> passes_;
};

}  // namespace deltafin
