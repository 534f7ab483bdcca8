#include "base/thread_pool.h"

#include <algorithm>
#include <memory>

namespace deltafin {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

static void range_of(size_t n, size_t grain, int parts, int index, size_t& b, size_t& e) {
  size_t chunks = (n + grain - 1) / grain;
  size_t per = chunks / parts, extra = chunks % parts;
  size_t cb = index * per + std::min<size_t>(index, extra);
  size_t ce = cb + per + (static_cast<size_t>(index) < extra ? 1 : 0);
  b = std::min(n, cb * grain);
  e = std::min(n, ce * grain);
}

void ThreadPool::worker(int index) {
  unsigned seen = 0;
  for (;;) {
    const std::function<void(size_t, size_t)>* job;
    size_t n, grain;
    int parts;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      grain = job_grain_;
      parts = parts_;
    }
    if (index < parts) {
      size_t b, e;
      range_of(n, grain, parts, index, b, e);
      if (b < e) (*job)(b, e);
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  size_t chunks = (n + grain - 1) / grain;
  int parts = static_cast<int>(std::min<size_t>(chunks, static_cast<size_t>(size())));
  if (parts <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = &fn;
    job_n_ = n;
    job_grain_ = grain;
    parts_ = parts;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  cv_start_.notify_all();
  size_t b, e;
  range_of(n, grain, parts, 0, b, e);
  if (b < e) fn(b, e);
  std::unique_lock<std::mutex> lk(mu_);
  cv_done_.wait(lk, [&] { return pending_ == 0; });
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
