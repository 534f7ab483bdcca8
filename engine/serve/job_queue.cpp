#include "serve/job_queue.h"

#include <algorithm>

namespace deltafin::serve {

void Job::push_delta(Delta d) {
  {
    std::lock_guard lk(mu_);
    deltas_.push_back(std::move(d));
  }
  cv_.notify_all();
}

void Job::finish(JobResult r) {
  {
    std::lock_guard lk(mu_);
    result_ = std::move(r);
    done_ = true;
  }
  cv_.notify_all();
}

void Job::fail(const ApiError& e) {
  {
    std::lock_guard lk(mu_);
    error_ = e;
    done_ = true;
  }
  cv_.notify_all();
}

bool Job::wait(std::chrono::milliseconds wait, std::vector<Delta>& out) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, wait, [&] { return done_ || !deltas_.empty(); });
  while (!deltas_.empty()) {
    out.push_back(std::move(deltas_.front()));
    deltas_.pop_front();
  }
  return done_;
}

void Job::wait_done() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return done_; });
}

std::optional<JobResult> Job::result() const {
  std::lock_guard lk(mu_);
  return result_;
}

std::optional<ApiError> Job::error() const {
  std::lock_guard lk(mu_);
  return error_;
}

bool JobQueue::admit() {
  std::lock_guard lk(mu_);
  if (shutdown_ || jobs_.size() + admitted_ >= capacity_) return false;
  ++admitted_;
  return true;
}

void JobQueue::push_admitted(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lk(mu_);
    --admitted_;
    job->seq = next_seq_++;
    jobs_.push_back(job);
  }
  cv_.notify_one();
}

void JobQueue::withdraw() {
  std::lock_guard lk(mu_);
  --admitted_;
}

bool JobQueue::push(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lk(mu_);
    if (shutdown_ || jobs_.size() + admitted_ >= capacity_) return false;
    job->seq = next_seq_++;
    jobs_.push_back(job);
  }
  cv_.notify_one();
  return true;
}

std::shared_ptr<Job> JobQueue::pop() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return shutdown_ || !jobs_.empty(); });
  if (shutdown_) return nullptr;
  auto j = jobs_.front();
  jobs_.pop_front();
  return j;
}

bool JobQueue::remove(const std::shared_ptr<Job>& job) {
  std::lock_guard lk(mu_);
  auto it = std::find(jobs_.begin(), jobs_.end(), job);
  if (it == jobs_.end()) return false;
  jobs_.erase(it);
  return true;
}

size_t JobQueue::waiting() const {
  std::lock_guard lk(mu_);
  return jobs_.size();
}

void JobQueue::shutdown() {
  {
    std::lock_guard lk(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
}

}  // namespace deltafin::serve
