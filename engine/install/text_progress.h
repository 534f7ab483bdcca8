#pragma once
#include <chrono>
#include <cstdio>
#include <string>

#include "install/install_events.h"

namespace deltafin {

// Renders install events for a terminal: a progress bar with bytes, speed and
// ETA redrawn in place on a TTY, plain lines otherwise, or JSON lines (--json).
class TextProgress : public InstallObserver {
 public:
  TextProgress(std::FILE* out, bool json, bool quiet = false);
  void on_message(const std::string& text) override;
  void on_progress(const InstallProgress& p) override;
  void on_file(const std::string& repo, const std::string& path, FileState state, const std::string& detail) override;
  void on_error(const std::string& what_failed, const std::string& what_to_do) override;
  void on_finished(bool ok) override;

 private:
  void clear_bar();
  std::FILE* out_;
  bool json_, quiet_, tty_;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point last_plain_{};
};

}  // namespace deltafin
