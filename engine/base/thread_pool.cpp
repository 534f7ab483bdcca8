#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace deltafin {

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls done() for up to spin_ns; true once it holds. Between rounds of polling the thread yields,
// so that a thread with real work on this CPU (an I/O completion, the disk reader) runs at once:
// on a 2-vCPU machine pure polling held up the expert reads (streamed decode 25-40 % slower).
template <class Done>
bool spin_until(long spin_ns, Done done) {
  if (spin_ns <= 0) return done();
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= until) return done();
    std::this_thread::yield();
  }
}

// Workers sleep at once unless DELTAFIN_POOL_SPIN_US asks them to poll first. Polling 200 us made a
// 16-vCPU H100 host's whole-slice CPU decode 12 % faster, but on a 16-vCPU H200 host the CPU layers
// of a split decode took 0.520 s/token polling against 0.265 sleeping (placement slice, 24 GB GPU +
// 128 GB RAM row, 2026-12-05), and on 2 vCPUs polling took time from the expert reads.
long spin_ns() {
  long us = 0;
  if (const char* v = std::getenv("DELTAFIN_POOL_SPIN_US"); v && *v) us = std::max(0L, std::strtol(v, nullptr, 10));
  return us * 1000;
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  spin_ns_ = spin_ns();
  if (const char* v = std::getenv("DELTAFIN_POOL_CHUNKS"); v && *v)
    chunks_per_thread_ = size_t(std::clamp(std::strtol(v, nullptr, 10), 1L, 64L));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (;;) {
    const size_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed);
    if (c >= job_chunks_) return;
    const size_t b = c * job_chunk_;
    (*job_)(b, std::min(job_n_, b + job_chunk_));
  }
}

void ThreadPool::worker() {
  unsigned seen = 0;
  for (;;) {
    if (!spin_until(spin_ns_, [&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      std::unique_lock<std::mutex> lk(mu_);
      ++sleepers_;
      cv_start_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      --sleepers_;
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    run_chunks();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may be asleep: wake it under the lock it checks pending_ under.
      std::lock_guard<std::mutex> lk(mu_);
      cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  const size_t grains = (n + grain - 1) / grain;
  if (grains <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  // Up to chunks_per_thread_ chunks per thread, taken in turn by whichever thread is free: a thread
  // that starts late or runs slow (a vCPU the host lent elsewhere) takes fewer, instead of the
  // whole call waiting for its fixed share.
  const size_t want = std::min(grains, static_cast<size_t>(size()) * chunks_per_thread_);
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = (grains + want - 1) / want * grain;
  job_chunks_ = (n + job_chunk_ - 1) / job_chunk_;
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  bool wake;
  {
    std::lock_guard<std::mutex> lk(mu_);
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) cv_start_.notify_all();
  run_chunks();
  const auto own_done = std::chrono::steady_clock::now();
  if (!spin_until(spin_ns_, [&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_done_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  calls_.fetch_add(1, std::memory_order_relaxed);
  wait_ns_.fetch_add(
      uint64_t(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - own_done).count()),
      std::memory_order_relaxed);
}

static std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}

ThreadPool& ThreadPool::global() {
  auto& p = global_slot();
  if (!p) p = std::make_unique<ThreadPool>(0);
  return *p;
}

void ThreadPool::set_global_threads(int threads) { global_slot() = std::make_unique<ThreadPool>(threads); }

}  // namespace deltafin
