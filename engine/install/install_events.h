#pragma once
#include <cstdint>
#include <string>

namespace deltafin {

enum class FileState { Queued, Downloading, Verifying, Verified, Retrying, Failed, Skipped };
const char* file_state_name(FileState s);

// A snapshot of the whole job, sent a few times a second.
struct InstallProgress {
  uint64_t bytes_done = 0;  // of this run's bytes_total (already-present bytes count as done)
  uint64_t bytes_total = 0;
  double bytes_per_second = 0;  // recent speed
  double eta_seconds = -1;      // negative while unknown
  int files_done = 0, files_total = 0;
  std::string current;  // repo/path being fetched
};

// Progress and results of setup, cache warm and friends. The CLI draws a bar
// from it; the GUI wraps it in a QObject. Calls are serialised by the engine
// but come from its worker threads.
class InstallObserver {
 public:
  virtual ~InstallObserver() = default;
  virtual void on_message(const std::string& text) {}
  virtual void on_progress(const InstallProgress& p) {}
  virtual void on_file(const std::string& repo, const std::string& path, FileState state, const std::string& detail) {}
  virtual void on_error(const std::string& what_failed, const std::string& what_to_do) {}
  virtual void on_finished(bool ok) {}
};

}  // namespace deltafin
