// deltafin-cuda-bench --trace: per-task times of the traced expert versions.
#pragma once

#include <string>
#include <vector>

#include "cuda/lab/expert_mlp.h"

namespace deltafin::cuda::bench {

// --trace: a traced version (v122: v121 with per-task times; v143: v138; v184: v183; v193: v192) over 6 routings each
// at T = 1 and 8 from all experts. Prints where the blocks' time goes (shares of blocks x the launch's span) and writes
// every task's record as CSV. frag_experts: the experts in fragment order.
void trace_expert_tasks(ExpertMlp& mlp, const std::string& version, const std::vector<MxExpert>& frag_experts, int K,
                        const std::string& path);

}  // namespace deltafin::cuda::bench
