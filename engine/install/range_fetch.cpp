#include "install/range_fetch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace deltafin {

bool WriteError::disk_full() const { return errno_ == ENOSPC || errno_ == EDQUOT || errno_ == EFBIG; }

void interruptible_sleep(double seconds, const std::atomic<bool>* cancel) {
  using clock = std::chrono::steady_clock;
  const clock::time_point end =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  for (clock::time_point now = clock::now(); now < end; now = clock::now()) {
    if (cancel && cancel->load()) return;
    std::this_thread::sleep_for(std::min<clock::duration>(std::chrono::milliseconds(50), end - now));
  }
}

void with_retries(const FetchTuning& tuning, const std::atomic<bool>* cancel, const std::function<void()>& fn) {
  double backoff = tuning.backoff_initial_s;
  for (int attempt = 1;; ++attempt) {
    try {
      fn();
      return;
    } catch (const HubError& e) {
      if (!e.transient() || attempt >= tuning.max_attempts || (cancel && cancel->load())) throw;
      interruptible_sleep(backoff, cancel);
      backoff = std::min(backoff * 2, tuning.backoff_max_s);
    }
  }
}

void fetch_range_to_fd(const HubClient& hub, const std::string& repo, const std::string& revision,
                       const std::string& path, uint64_t offset, uint64_t length, int fd, std::atomic<uint64_t>& done,
                       std::atomic<uint64_t>* progress, const FetchTuning& tuning, const std::atomic<bool>* cancel,
                       const std::function<void(const std::string&)>& on_retry) {
  int failures = 0;
  double backoff = tuning.backoff_initial_s;
  while (done.load() < length) {
    if (cancel && cancel->load()) throw Error("cancelled while fetching " + repo + "/" + path);
    const uint64_t start = done.load();
    int write_errno = 0;
    try {
      // Runs inside libcurl's write callback: it must not throw; a failed write stops the transfer.
      hub.fetch_range(
          repo, revision, path, offset + start, length - start,
          [&](const uint8_t* d, size_t n) {
            uint64_t at = offset + done.load();
            size_t off = 0;
            while (off < n) {
              ssize_t w = ::pwrite(fd, d + off, n - off, static_cast<off_t>(at + off));
              if (w < 0 && errno == EINTR) continue;
              if (w <= 0) {
                write_errno = w < 0 ? errno : EIO;
                // Whole bytes written before the failure count: they are on disk at their offsets.
                done += off;
                if (progress) *progress += off;
                return false;
              }
              off += static_cast<size_t>(w);
            }
            done += n;
            if (progress) *progress += n;
            return true;
          },
          cancel);
    } catch (const HubError& e) {
      if (write_errno) {
        const uint64_t left = length - done.load();
        const bool full = write_errno == ENOSPC || write_errno == EDQUOT;
        throw WriteError(std::string(full ? "the disk is full: " : "") + "cannot write " + path + ": " +
                             std::strerror(write_errno) + " (" + std::to_string(left) +
                             " bytes of this part still to write)",
                         full ? "free space on the model folder's disk and run the same command again; it resumes"
                              : "check the model folder's disk and run the same command again; it resumes",
                         write_errno, left);
      }
      if (!e.transient()) throw;
      if (done.load() > start) {
        failures = 0;  // the attempt made progress: the link works, keep going
        backoff = tuning.backoff_initial_s;
      }
      if (++failures >= tuning.max_attempts)
        throw HubError(e.what_failed() + " (gave up after " + std::to_string(failures) + " attempts)",
                       "check the connection and run the same command again; it resumes where it stopped", true,
                       e.http_status());
      if (on_retry) on_retry(e.what_failed());
      interruptible_sleep(backoff, cancel);
      backoff = std::min(backoff * 2, tuning.backoff_max_s);
    }
  }
}

}  // namespace deltafin
