#include "drafts/draft_tensor_binder.h"

#include <cstring>

#include "base/bf16.h"
#include "base/error.h"
#include "model/checkpoint.h"

namespace deltafin {

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}
}  // namespace

bool DraftTensorBinder::has(const std::string& name) const { return ck_.find(prefix_ + name) != nullptr; }

Mat DraftTensorBinder::mat(const std::string& name, int64_t rows, int64_t cols) {
  const CatalogEntry* e = ck_.find(prefix_ + name);
  if (!e)
    throw Error(what_ + " tensor " + prefix_ + name + " is missing from " + ck_.dir(), "re-install the draft model");
  if (e->info->dtype != DType::BF16 && e->info->dtype != DType::F32)
    throw Error(what_ + " tensor " + prefix_ + name + " is " + dtype_name(e->info->dtype) + "; expected BF16 or F32",
                "this is not the draft checkpoint Deltafin expects");
  const std::vector<int64_t> want = rows > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols};
  if (e->info->shape != want)
    throw Error(what_ + " tensor " + prefix_ + name + " has shape " + shape_str(e->info->shape) +
                    " but its config implies " + shape_str(want),
                "the draft's config.json and weights do not belong together");
  bytes_ += e->info->nbytes();
  return Mat{ck_.data(*e), e->info->dtype, rows > 0 ? rows : 1, cols};
}

std::vector<float> DraftTensorBinder::vec(const std::string& name, int64_t n) {
  const Mat m = mat(name, 0, n);
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = m.at(0, i);
  return out;
}

}  // namespace deltafin
