#include "store/read_engine.h"

#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.h"

namespace deltafin {

namespace {

class IoUringEngine : public ReadEngine {
 public:
  explicit IoUringEngine(int depth) : depth_(depth) {}
  bool init(std::string* why) {
    int r = io_uring_queue_init(static_cast<unsigned>(depth_), &ring_, 0);
    if (r < 0) {
      if (why) *why = std::string("io_uring unavailable: ") + std::strerror(-r);
      return false;
    }
    ok_ = true;
    return true;
  }
  ~IoUringEngine() override {
    if (ok_) io_uring_queue_exit(&ring_);
  }
  int depth() const override { return depth_; }
  const char* name() const override { return "io_uring"; }
  void submit(const ReadJob& j) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (!sqe) throw Error("io_uring submission queue full");
    io_uring_prep_read(sqe, j.fd, j.dst, static_cast<unsigned>(j.bytes), j.offset);
    io_uring_sqe_set_data64(sqe, j.tag);
    int r = io_uring_submit(&ring_);
    if (r < 0) throw Error(std::string("io_uring_submit failed: ") + std::strerror(-r));
  }
  ReadDone wait() override {
    io_uring_cqe* cqe = nullptr;
    int r;
    do {
      r = io_uring_wait_cqe(&ring_, &cqe);
    } while (r == -EINTR);
    if (r < 0) throw Error(std::string("io_uring_wait_cqe failed: ") + std::strerror(-r));
    ReadDone d{io_uring_cqe_get_data64(cqe), cqe->res};
    io_uring_cqe_seen(&ring_, cqe);
    return d;
  }

 private:
  int depth_;
  io_uring ring_{};
  bool ok_ = false;
};

class PreadEngine : public ReadEngine {
 public:
  explicit PreadEngine(int depth) : depth_(depth) {
    for (int i = 0; i < depth; ++i) threads_.emplace_back([this] { run(); });
  }
  ~PreadEngine() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int depth() const override { return depth_; }
  const char* name() const override { return "pread pool"; }
  void submit(const ReadJob& j) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      jobs_.push_back(j);
    }
    cv_.notify_one();
  }
  ReadDone wait() override {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return !done_.empty(); });
    ReadDone d = done_.front();
    done_.pop_front();
    return d;
  }

 private:
  void run() {
    for (;;) {
      ReadJob j;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        j = jobs_.front();
        jobs_.pop_front();
      }
      uint64_t got = 0;
      int64_t result = 0;
      while (got < j.bytes) {
        ssize_t r = ::pread(j.fd, j.dst + got, j.bytes - got, static_cast<off_t>(j.offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
          result = r < 0 ? -errno : static_cast<int64_t>(got);
          break;
        }
        got += static_cast<uint64_t>(r);
        result = static_cast<int64_t>(got);
      }
      {
        std::lock_guard<std::mutex> lk(mu_);
        done_.push_back({j.tag, result});
      }
      done_cv_.notify_one();
    }
  }
  int depth_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<ReadJob> jobs_;
  std::deque<ReadDone> done_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

}  // namespace

std::unique_ptr<ReadEngine> make_io_uring_engine(int depth, std::string* why_not) {
  auto e = std::make_unique<IoUringEngine>(depth);
  if (!e->init(why_not)) return nullptr;
  return e;
}

std::unique_ptr<ReadEngine> make_pread_engine(int depth) { return std::make_unique<PreadEngine>(depth); }

}  // namespace deltafin
