#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deltafin {

// A fixed pool that splits [0, n) into contiguous chunks, which the caller and the workers take
// in turn. Each output element is produced by exactly one thread with the same code, so results
// do not depend on the thread count or on which thread took which chunk. Four chunks per thread by
// default, taken by whichever thread is free, so that a thread that wakes late or a slow vCPU holds
// up a quarter of its share (a 16-vCPU host decoded 14-15 % faster than with one chunk per thread,
// its matrices at 106-108 against 89-97 GB/s; 2 vCPUs the same); DELTAFIN_POOL_CHUNKS sets another
// count (1-64).
//
// A decode step is hundreds of short parallel_for calls (a K3 expert matrix is ~55 us of reads at
// 16 threads), so the hand-over costs: waking a sleeping thread takes tens of microseconds on
// virtual machines. DELTAFIN_POOL_SPIN_US=N makes the workers and the caller poll N us between
// calls before they sleep; by default they sleep at once, since polling threads also take CPU time
// from others (thread_pool.cpp says where each was measured).
class ThreadPool {
 public:
  explicit ThreadPool(int threads = 0);  // 0 = hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) on disjoint ranges covering [0, n), from any thread of the pool; ranges
  // are multiples of `grain` except the last. Blocks until all are done.
  // One caller at a time; fn must not call parallel_for on the same pool.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain = 1);

  static ThreadPool& global();
  static void set_global_threads(int threads);

  // Calls that went out to the workers, and the caller's time between finishing its own chunks and
  // the last worker's check-in (the hand-over's cost when the chunks are even: late wake-ups), for
  // `run --stats` to tell time in the pool's hand-overs from time in the work itself.
  struct Stats {
    uint64_t calls = 0;
    double wait_seconds = 0;
    Stats operator-(const Stats& o) const { return {calls - o.calls, wait_seconds - o.wait_seconds}; }
  };
  Stats stats() const {
    return {calls_.load(std::memory_order_relaxed), double(wait_ns_.load(std::memory_order_relaxed)) * 1e-9};
  }

 private:
  void worker();
  void run_chunks();  // takes chunks of the current job until none is left
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  // Written by the caller before generation_ moves on; read by the workers after they see it.
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t job_n_ = 0, job_chunk_ = 1, job_chunks_ = 0;
  std::atomic<size_t> next_chunk_{0};
  std::atomic<unsigned> generation_{0};
  std::atomic<int> pending_{0};
  int sleepers_ = 0;  // workers waiting on cv_start_ (guarded by mu_)
  std::atomic<bool> stop_{false};
  long spin_ns_ = 0;
  size_t chunks_per_thread_ = 4;
  std::atomic<uint64_t> calls_{0}, wait_ns_{0};
};

}  // namespace deltafin
