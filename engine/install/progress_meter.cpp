#include "install/progress_meter.h"

namespace deltafin {

const char* file_state_name(FileState s) {
  switch (s) {
    case FileState::Queued:
      return "queued";
    case FileState::Downloading:
      return "downloading";
    case FileState::Verifying:
      return "verifying";
    case FileState::Verified:
      return "verified";
    case FileState::Retrying:
      return "retrying";
    case FileState::Failed:
      return "failed";
    case FileState::Skipped:
      return "skipped";
  }
  return "?";
}

ProgressMeter::ProgressMeter(InstallObserver& obs, uint64_t bytes_total, int files_total, double interval_s)
    : obs_(obs), total_(bytes_total), files_total_(files_total), interval_(interval_s) {
  win_t_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { loop(); });
}

ProgressMeter::~ProgressMeter() {
  {
    std::lock_guard<std::mutex> g(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressMeter::set_current(const std::string& what) {
  std::lock_guard<std::mutex> g(cur_mu_);
  current_ = what;
}

void ProgressMeter::loop() {
  std::unique_lock<std::mutex> lk(stop_mu_);
  while (!stop_) {
    stop_cv_.wait_for(lk, std::chrono::duration<double>(interval_));
    if (stop_) break;
    lk.unlock();
    emit();
    lk.lock();
  }
}

void ProgressMeter::emit() {
  auto now = std::chrono::steady_clock::now();
  uint64_t b = bytes_.load();
  double dt = std::chrono::duration<double>(now - win_t_).count();
  if (dt >= 1.0 || speed_ == 0) {
    // Bytes can go down when a corrupt file is thrown away; speed never does.
    double inst = dt > 0 && b >= win_b_ ? double(b - win_b_) / dt : 0;
    speed_ = speed_ == 0 ? inst : 0.7 * speed_ + 0.3 * inst;
    if (dt >= 1.0) {
      win_t_ = now;
      win_b_ = b;
    }
  }
  InstallProgress p;
  p.bytes_done = b;
  p.bytes_total = total_;
  p.bytes_per_second = speed_;
  p.eta_seconds = speed_ > 0 && total_ >= b ? double(total_ - b) / speed_ : -1;
  p.files_done = files_done_.load();
  p.files_total = files_total_;
  {
    std::lock_guard<std::mutex> g(cur_mu_);
    p.current = current_;
  }
  std::lock_guard<std::mutex> g(obs_mu_);
  obs_.on_progress(p);
}

void ProgressMeter::message(const std::string& text) {
  std::lock_guard<std::mutex> g(obs_mu_);
  obs_.on_message(text);
}

void ProgressMeter::file(const std::string& repo, const std::string& path, FileState s, const std::string& detail) {
  std::lock_guard<std::mutex> g(obs_mu_);
  obs_.on_file(repo, path, s, detail);
}

void ProgressMeter::error(const std::string& what_failed, const std::string& what_to_do) {
  std::lock_guard<std::mutex> g(obs_mu_);
  obs_.on_error(what_failed, what_to_do);
}

void ProgressMeter::finish(bool ok) {
  if (finished_) return;
  finished_ = true;
  {
    std::lock_guard<std::mutex> g(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  emit();
  std::lock_guard<std::mutex> g(obs_mu_);
  obs_.on_finished(ok);
}

}  // namespace deltafin
