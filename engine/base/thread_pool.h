#pragma once
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deltafin {

// A fixed pool that splits [0, n) into contiguous ranges, one per worker.
// Each output element is produced by exactly one thread with the same code,
// so results do not depend on the thread count.
class ThreadPool {
 public:
  explicit ThreadPool(int threads = 0);  // 0 = hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) on disjoint ranges covering [0, n); ranges are
  // multiples of `grain` except the last. Blocks until all are done.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain = 1);

  static ThreadPool& global();
  static void set_global_threads(int threads);

 private:
  void worker(int index);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t job_n_ = 0, job_grain_ = 1;
  int parts_ = 0;
  unsigned generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace deltafin
