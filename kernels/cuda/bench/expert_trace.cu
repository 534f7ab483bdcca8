// deltafin-cuda-bench --trace (expert_trace.h). A benchmark part, not a test: nothing asserts a time.
#include "expert_trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include "cuda/cuda_common.cuh"
#include "cuda/lab/expert_kernels_lab.h"
#include "expert_routings.h"

namespace deltafin::cuda::bench {

void trace_expert_tasks(ExpertMlp& mlp, const std::string& version, const std::vector<MxExpert>& frag_experts, int K,
                        const std::string& path) {
  for (const std::string& v : expert_versions(mlp))
    if (v.rfind(version + " ", 0) == 0) select_expert_version(mlp, v);
  constexpr int W = 5;
  const size_t cap = 1 << 16;  // tasks per launch, far above K3's (T = 8: ~6,000)
  DeviceBuffer rec(cap * W * sizeof(unsigned long long));
  set_expert_trace(rec.as<unsigned long long>());
  std::ofstream csv(path);
  csv << "version,T,call,task,kind,sm,block,start_ns,waited_ns,ready_ns,end_ns\n";
  std::mt19937_64 rng(4242);
  std::vector<float> z(8 * static_cast<size_t>(mlp.latent()), 0.5f);
  DeviceBuffer dz(z.size() * 4), dy(z.size() * 4);
  dz.upload(z.data(), z.size() * 4);
  std::printf("\n%s: where each block's time goes, %% of blocks x span (6 calls each)\n", mlp.variant());
  std::printf("%-4s %8s %7s %7s %7s %7s %7s %7s %7s %9s %9s\n", "T", "span us", "start", "wait", "prep", "stream",
              "gaps", "tail", "tasks", "A task us", "B task us");
  for (const int T : {1, 8}) {
    const Routings rt = make_routings(rng, frag_experts, T, K, static_cast<int>(frag_experts.size()), 8);
    std::vector<float> weights(size_t(T) * K, 1.0f / K);
    double sum[7] = {}, a_us = 0, b_us = 0, span_sum = 0;
    long na = 0, nb = 0, ntasks = 0;
    for (int call = 0; call < 8; ++call) {
      DELTAFIN_CUDA_CHECK(cudaMemset(rec.data(), 0, rec.size()));
      mlp.run(rt.tables[call], rt.slots[call].data(), weights.data(), T, dz.as<float>(), dy.as<float>());
      synchronize();
      if (call < 2) continue;  // warm-up
      std::vector<unsigned long long> h(cap * W);
      rec.download(h.data(), rec.size());
      struct Task {
        unsigned id;
        unsigned kind, sm, block;  // kind: 0 gate/up (A), 1 down (B), 2 combine (C)
        unsigned long long t[4];
      };
      std::vector<Task> tasks;
      for (size_t i = 0; i < cap; ++i) {
        const unsigned long long* r = &h[i * W];
        if (!r[1]) continue;
        tasks.push_back({static_cast<unsigned>(i),
                         static_cast<unsigned>(r[0] >> 62),
                         static_cast<unsigned>((r[0] >> 32) & 0x3fffffffu),
                         static_cast<unsigned>(r[0] & 0xffffffffu),
                         {r[1], r[2], r[3], r[4]}});
      }
      if (tasks.empty()) throw CudaError("trace: " + version + " wrote no records");
      unsigned long long t0 = ~0ull, t1 = 0;
      for (const Task& k : tasks) {
        t0 = std::min(t0, k.t[0]);
        t1 = std::max(t1, k.t[3]);
      }
      // Per block: first start, last end, and the parts of its tasks.
      std::vector<std::vector<const Task*>> by_block;
      for (const Task& k : tasks) {
        if (k.block >= by_block.size()) by_block.resize(k.block + 1);
        by_block[k.block].push_back(&k);
      }
      double start = 0, wait = 0, prep = 0, stream = 0, gaps = 0, tail = 0;
      int blocks = 0;
      for (auto& b : by_block) {
        if (b.empty()) continue;
        ++blocks;
        std::sort(b.begin(), b.end(), [](const Task* x, const Task* y) { return x->t[0] < y->t[0]; });
        start += static_cast<double>(b.front()->t[0] - t0);
        tail += static_cast<double>(t1 - b.back()->t[3]);
        for (size_t i = 0; i < b.size(); ++i) {
          const Task& k = *b[i];
          wait += static_cast<double>(k.t[1] - k.t[0]);
          prep += static_cast<double>(k.t[2] - k.t[1]);
          stream += static_cast<double>(k.t[3] - k.t[2]);
          if (i > 0) gaps += static_cast<double>(k.t[0] - b[i - 1]->t[3]);
        }
      }
      const double total = static_cast<double>(blocks) * static_cast<double>(t1 - t0);
      const double parts[7] = {start, wait, prep, stream, gaps, tail, static_cast<double>(tasks.size())};
      for (int i = 0; i < 6; ++i) sum[i] += parts[i] / total;
      ntasks += static_cast<long>(tasks.size());
      span_sum += static_cast<double>(t1 - t0) / 1e3;
      for (const Task& k : tasks) {
        const char* kind = k.kind == 0 ? "A" : k.kind == 1 ? "B" : "C";
        if (k.kind == 0) {
          a_us += static_cast<double>(k.t[3] - k.t[0]) / 1e3;
          ++na;
        } else if (k.kind == 1) {
          b_us += static_cast<double>(k.t[3] - k.t[0]) / 1e3;
          ++nb;
        }
        csv << version << ',' << T << ',' << call << ',' << k.id << ',' << kind << ',' << k.sm << ',' << k.block << ','
            << (k.t[0] - t0) << ',' << (k.t[1] - t0) << ',' << (k.t[2] - t0) << ',' << (k.t[3] - t0) << '\n';
      }
    }
    const int n = 6;
    std::printf("%-4d %8.1f %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %7ld %9.2f %9.2f\n", T, span_sum / n,
                100 * sum[0] / n, 100 * sum[1] / n, 100 * sum[2] / n, 100 * sum[3] / n, 100 * sum[4] / n,
                100 * sum[5] / n, ntasks / n, na ? a_us / na : 0.0, nb ? b_us / nb : 0.0);
  }
  set_expert_trace(nullptr);
  std::printf(
      "columns: start = before a block's first task, wait = B/C tasks waiting for their inputs, prep = from the\n"
      "wait to the first pass streaming (staging the activation fragments), stream = the passes over the weights\n"
      "and the task's finish, gaps = between a block's tasks (tickets, signalling), tail = after a block's last task.\n"
      "Per-task CSV: %s\n",
      path.c_str());
}

}  // namespace deltafin::cuda::bench
