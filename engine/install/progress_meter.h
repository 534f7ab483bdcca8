#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "install/install_events.h"

namespace deltafin {

// Turns shared byte counters into InstallProgress events (speed over a sliding
// window, ETA from it) on its own thread, and serialises every observer call.
class ProgressMeter {
 public:
  ProgressMeter(InstallObserver& obs, uint64_t bytes_total, int files_total, double interval_s = 0.25);
  ~ProgressMeter();
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  std::atomic<uint64_t>& bytes() { return bytes_; }
  void file_done() { ++files_done_; }
  void set_current(const std::string& what);

  // Observer calls from any thread go through these.
  void message(const std::string& text);
  void file(const std::string& repo, const std::string& path, FileState s, const std::string& detail = {});
  void error(const std::string& what_failed, const std::string& what_to_do);
  void finish(bool ok);  // final progress event, then on_finished; stops the thread

 private:
  void loop();
  void emit();
  InstallObserver& obs_;
  std::mutex obs_mu_;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<int> files_done_{0};
  uint64_t total_;
  int files_total_;
  double interval_;
  std::string current_;
  std::mutex cur_mu_;
  // speed window
  std::chrono::steady_clock::time_point win_t_;
  uint64_t win_b_ = 0;
  double speed_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false, finished_ = false;
  std::thread thread_;
};

}  // namespace deltafin
