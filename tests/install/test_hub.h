#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace deltafin::test {

// What the test hub does wrong, for requests whose path contains `match`.
struct HubFault {
  enum Kind {
    DropMidBody,  // sends half the body, then closes the connection
    Status500,
    Status503,
    Stall,        // sends half the body, then goes silent for stall_ms
    WrongBytes,   // flips one byte in the body
    WrongLength,  // appends bytes beyond what was asked (headers agree with the longer body)
    Missing,      // 404 although the listing names the file
    IgnoreRange,  // answers a ranged request with the whole file (200)
  };
  Kind kind;
  std::string match;
  int times = 1;  // requests affected; -1: all of them
  int stall_ms = 3000;
};

// A Hugging Face Hub on 127.0.0.1 serving fixture folders in the Hub URL
// layout: /api/models/{repo}/tree/{rev}?recursive=true and
// /{repo}/resolve/{rev}/{path}, with Range support and fault injection.
class TestHub {
 public:
  TestHub();
  ~TestHub();
  TestHub(const TestHub&) = delete;
  TestHub& operator=(const TestHub&) = delete;

  std::string url() const;
  // Serves every file under dir (recursively) as repo at revision.
  void add_repo(const std::string& repo, const std::string& revision, const std::string& dir);
  // A listing entry whose bytes are not served (planning tests with real sizes).
  void add_listed_only(const std::string& repo, const std::string& revision, const std::string& path, uint64_t size,
                       const std::string& sha256);
  // A file served from memory.
  void add_bytes(const std::string& repo, const std::string& revision, const std::string& path,
                 const std::string& bytes);

  void add_fault(const HubFault& f);
  void clear_faults();
  void set_bytes_per_second(uint64_t bps) { bps_ = bps; }  // 0: unthrottled
  void set_redirect_to(const std::string& prefix);         // resolve/ answers 302 to prefix + /{repo}/{rev}/{path}
  // Requests whose log line contains needle: "METHOD target range", plus " [authorization]"
  // when the request carried an Authorization header.
  int requests_matching(const std::string& needle) const;

 private:
  struct File {
    std::string path;
    std::string bytes;  // served content
    uint64_t size = 0;
    std::string sha256, git_oid;
    bool lfs = false, listed_only = false;
  };
  void serve();
  void handle(int fd);
  bool take_fault(const std::string& path, HubFault& out);
  const File* find(const std::string& repo, const std::string& rev, const std::string& path) const;

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  // One thread per connection; those that finished are joined when the next connection comes,
  // so a long run (thousands of range requests) does not pile up unjoined threads.
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Worker> workers_;
  std::map<std::string, std::vector<File>> repos_;  // "repo@rev" -> files
  std::vector<HubFault> faults_;
  std::vector<std::string> log_;
  std::atomic<uint64_t> bps_{0};
  std::string redirect_prefix_;
};

}  // namespace deltafin::test
