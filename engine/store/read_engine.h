#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace deltafin {

struct ReadJob {
  int fd = -1;
  uint64_t offset = 0, bytes = 0;
  uint8_t* dst = nullptr;
  uint64_t tag = 0;
};

struct ReadDone {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes read, or -errno
};

// Asynchronous positional reads with a fixed queue depth. One thread submits
// and reaps; the engine overlaps up to depth() reads in the kernel.
class ReadEngine {
 public:
  virtual ~ReadEngine() = default;
  virtual int depth() const = 0;
  virtual void submit(const ReadJob& job) = 0;  // caller keeps in-flight reads below depth()
  virtual ReadDone wait() = 0;                  // blocks until one read completes
  virtual const char* name() const = 0;
};

// io_uring (liburing); nullptr when the kernel or sandbox refuses it.
std::unique_ptr<ReadEngine> make_io_uring_engine(int depth, std::string* why_not = nullptr);
// A pool of threads doing blocking pread: the portable fallback.
std::unique_ptr<ReadEngine> make_pread_engine(int depth);

}  // namespace deltafin
