#include "cuda/pass_timeline.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace deltafin::cuda {

PassTimeline::PassTimeline() {
  const char* e = std::getenv("DELTAFIN_CUDA_TIMELINE");
  if (e && std::strcmp(e, "prefill") == 0) mode_ = 1;
  else if (e && std::strcmp(e, "all") == 0) mode_ = 2;
}

PassTimeline::~PassTimeline() {
  for (cudaEvent_t ev : pool_) cudaEventDestroy(ev);
}

void PassTimeline::begin(int T) {
  if (!marks_.empty()) report(stderr);
  on_ = mode_ == 2 || (mode_ == 1 && T > 1);
  rows_ = T;
}

void PassTimeline::mark(const char* what, int index, cudaStream_t s) {
  if (!on_) return;
  if (used_ == pool_.size()) {
    cudaEvent_t ev;
    if (cudaEventCreate(&ev) != cudaSuccess) return;  // a diagnostic: never fails the pass
    pool_.push_back(ev);
  }
  cudaEvent_t ev = pool_[used_++];
  if (cudaEventRecord(ev, s) != cudaSuccess) return;
  marks_.push_back({what, index, ev});
}

void PassTimeline::report(std::FILE* out) {
  if (marks_.empty()) return;
  struct Row {
    float ms;
    const Mark* m;
  };
  std::vector<Row> rows;
  for (const Mark& m : marks_) cudaEventSynchronize(m.ev);
  for (const Mark& m : marks_) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, marks_.front().ev, m.ev) != cudaSuccess) continue;
    rows.push_back({ms, &m});
  }
  // Marks on other streams may precede the first one recorded: times relative to the earliest.
  float t0 = 0;
  for (const Row& r : rows) t0 = std::min(t0, r.ms);
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ms < b.ms; });
  std::fprintf(out, "timeline of a %d-row pass (ms)\n", rows_);
  for (const Row& r : rows) std::fprintf(out, "  %9.3f  %s %d\n", double(r.ms - t0), r.m->what, r.m->index);
  std::fflush(out);
  marks_.clear();
  used_ = 0;
}

}  // namespace deltafin::cuda
