#pragma once
#include <string>
#include <vector>

#include "runtime/ops.h"

namespace deltafin {

class Checkpoint;

// Binds a draft model's tensors in place, checking names, dtypes and shapes;
// errors name the tensor and the model folder.
class DraftTensorBinder {
 public:
  DraftTensorBinder(const Checkpoint& ck, std::string prefix, std::string what)
      : ck_(ck), prefix_(std::move(prefix)), what_(std::move(what)) {}
  bool has(const std::string& name) const;
  Mat mat(const std::string& name, int64_t rows, int64_t cols);
  std::vector<float> vec(const std::string& name, int64_t n);  // widened exactly to fp32
  uint64_t bytes() const { return bytes_; }                    // bytes bound so far

 private:
  const Checkpoint& ck_;
  std::string prefix_, what_;
  uint64_t bytes_ = 0;
};

}  // namespace deltafin
