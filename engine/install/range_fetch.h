#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "install/hub_client.h"

namespace deltafin {

// Retry policy for everything fetched from a hub.
struct FetchTuning {
  int parts = 4;                          // parallel ranged requests per large file
  uint64_t min_part_bytes = 32ull << 20;  // a file is split only into parts at least this big
  int max_attempts = 8;                   // consecutive failures without progress before giving up
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30;
  int verify_attempts = 2;             // full downloads of one file before a hash mismatch is an error
  double checkpoint_interval_s = 1.0;  // how often partial state is made durable
};

// Writing fetched bytes to the local file failed (a full disk, a quota, an I/O error):
// never retried, the bytes written before it stay usable for a resume.
class WriteError : public Error {
 public:
  WriteError(const std::string& what, const std::string& todo, int err, uint64_t unwritten)
      : Error(what, todo), errno_(err), unwritten_(unwritten) {}
  int error_number() const { return errno_; }
  bool disk_full() const;                            // ENOSPC, EDQUOT, or EFBIG (a file size limit)
  uint64_t unwritten() const { return unwritten_; }  // bytes of the range still to write

 private:
  int errno_;
  uint64_t unwritten_;
};

// Fetches bytes [offset, offset+length) of a hub file into fd at the same
// offset, retrying transient failures with exponential backoff and resuming
// where each attempt stopped. `done` counts bytes already written for this range
// (resume point) and is advanced as bytes land; `progress` is a shared counter.
// `on_retry` hears about every retried failure. A failed local write throws WriteError
// (never through libcurl: the write callback only reports it).
void fetch_range_to_fd(const HubClient& hub, const std::string& repo, const std::string& revision,
                       const std::string& path, uint64_t offset, uint64_t length, int fd, std::atomic<uint64_t>& done,
                       std::atomic<uint64_t>* progress, const FetchTuning& tuning, const std::atomic<bool>* cancel,
                       const std::function<void(const std::string&)>& on_retry = {});

// Runs fn, retrying transient HubErrors with exponential backoff (listings, metadata, headers).
void with_retries(const FetchTuning& tuning, const std::atomic<bool>* cancel, const std::function<void()>& fn);

// Sleeps up to `seconds`, waking early when cancel becomes true.
void interruptible_sleep(double seconds, const std::atomic<bool>* cancel);

}  // namespace deltafin
