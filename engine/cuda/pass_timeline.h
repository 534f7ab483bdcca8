#pragma once
// A GPU pass's timeline for finding where a split or streamed pass waits: events recorded on the
// compute and copy streams at the points a pass passes (a layer's start, its streamed spine ready,
// its routing read back, its experts in VRAM, its end; a streamed unit's copy start and end),
// printed to stderr as milliseconds since the pass's first mark once the pass is done.
// DELTAFIN_CUDA_TIMELINE=prefill times passes of more than one row, =all every pass; unset, marks
// cost nothing.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

namespace deltafin::cuda {

class PassTimeline {
 public:
  PassTimeline();
  ~PassTimeline();
  PassTimeline(const PassTimeline&) = delete;
  PassTimeline& operator=(const PassTimeline&) = delete;

  // Starts a pass of T rows: marks are kept when the setting asks for such passes.
  void begin(int T);
  bool on() const { return on_; }
  // Records `what` (with an index: a layer or a unit) on `s`, when this pass is timed.
  void mark(const char* what, int index, cudaStream_t s);
  // Prints the pass's marks in time order (after the work they follow is done) and forgets them.
  void report(std::FILE* out);

 private:
  struct Mark {
    const char* what;
    int index;
    cudaEvent_t ev;
  };
  int mode_ = 0;  // 0 off, 1 passes of more than one row, 2 every pass
  bool on_ = false;
  int rows_ = 0;
  std::vector<Mark> marks_;
  std::vector<cudaEvent_t> pool_;
  size_t used_ = 0;
};

}  // namespace deltafin::cuda
