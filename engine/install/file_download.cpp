#include "install/file_download.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "install/disk_space.h"
#include "install/file_hash.h"
#include "model/model_root.h"

namespace fs = std::filesystem;

namespace deltafin {

namespace {

struct Part {
  uint64_t begin = 0, end = 0;
  std::atomic<uint64_t> done{0};
};

std::string state_path(const std::string& dest) { return dest + ".partial.json"; }
std::string partial_path(const std::string& dest) { return dest + ".partial"; }

// Loads part state when it belongs to this exact file version; empty otherwise.
std::vector<std::unique_ptr<Part>> load_state(const std::string& dest, const HubFile& file) {
  std::vector<std::unique_ptr<Part>> parts;
  std::error_code ec;
  if (!fs::exists(state_path(dest), ec) || !fs::exists(partial_path(dest), ec)) return parts;
  if (fs::file_size(partial_path(dest), ec) != file.size || ec) return parts;
  try {
    auto j = nlohmann::json::parse(read_text_file(state_path(dest)));
    if (j.at("size").get<uint64_t>() != file.size || j.at("hash").get<std::string>() != file.expected_hash())
      return parts;
    uint64_t expect = 0;
    for (const auto& p : j.at("parts")) {
      auto part = std::make_unique<Part>();
      part->begin = p.at(0).get<uint64_t>();
      part->end = p.at(1).get<uint64_t>();
      part->done = p.at(2).get<uint64_t>();
      if (part->begin != expect || part->end < part->begin || part->done > part->end - part->begin) return {};
      expect = part->end;
      parts.push_back(std::move(part));
    }
    if (expect != file.size) return {};
  } catch (const std::exception&) {
    return {};  // a damaged state file only costs a fresh start
  }
  return parts;
}

void save_state(const std::string& dest, const HubFile& file, const std::vector<std::unique_ptr<Part>>& parts,
                const std::vector<uint64_t>& done) {
  nlohmann::json j;
  j["size"] = file.size;
  j["hash"] = file.expected_hash();
  j["parts"] = nlohmann::json::array();
  for (size_t i = 0; i < parts.size(); ++i) j["parts"].push_back({parts[i]->begin, parts[i]->end, done[i]});
  write_file_atomically(state_path(dest), j.dump());
}

void discard(const std::string& dest) {
  std::error_code ec;
  fs::remove(state_path(dest), ec);
  fs::remove(partial_path(dest), ec);
}

}  // namespace

uint64_t partial_bytes(const std::string& dest, const HubFile& file) {
  uint64_t n = 0;
  for (const auto& p : load_state(dest, file)) n += p->done;
  return n;
}

void download_file(const HubClient& hub, const std::string& repo, const std::string& revision, const HubFile& file,
                   const std::string& dest, const FetchTuning& tuning, std::atomic<uint64_t>& progress,
                   const std::function<void(FileState, const std::string&)>& on_state,
                   const std::atomic<bool>* cancel) {
  std::error_code ec;
  fs::create_directories(fs::path(dest).parent_path(), ec);
  const std::string what = repo + "/" + file.path;
  for (int round = 1;; ++round) {
    auto parts = load_state(dest, file);
    if (parts.empty()) {
      discard(dest);
      const uint64_t min_part = std::max<uint64_t>(tuning.min_part_bytes, 1);
      uint64_t n = std::clamp<uint64_t>(file.size / min_part, 1, static_cast<uint64_t>(std::max(tuning.parts, 1)));
      for (uint64_t i = 0; i < n; ++i) {
        auto p = std::make_unique<Part>();
        p->begin = file.size * i / n;
        p->end = file.size * (i + 1) / n;
        parts.push_back(std::move(p));
      }
    }
    int fd = ::open(partial_path(dest).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw Error("cannot create " + partial_path(dest) + ": " + std::strerror(errno), "check permissions");
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    if (::ftruncate(fd, static_cast<off_t>(file.size)) != 0)
      throw Error("cannot size " + partial_path(dest) + ": " + std::strerror(errno), "check free space");

    uint64_t resumed = 0;
    for (auto& p : parts) resumed += p->done;
    progress += resumed;
    on_state(FileState::Downloading,
             resumed ? "resuming at " + std::to_string(resumed) + " of " + std::to_string(file.size) : "");

    // Durable order: data reaches the disk before the state that claims it.
    uint64_t recorded = 0;  // bytes the state file on disk claims: where a resume starts
    auto checkpoint = [&] {
      std::vector<uint64_t> done;
      uint64_t sum = 0;
      for (auto& p : parts) done.push_back(p->done.load()), sum += done.back();
      if (::fdatasync(fd) != 0)
        throw Error("cannot flush " + partial_path(dest) + ": " + std::strerror(errno), "check the disk");
      save_state(dest, file, parts, done);
      recorded = sum;
    };
    checkpoint();

    std::atomic<bool> stop{false};
    // Parts retry on their own threads; callers get one on_state call at a time.
    std::mutex state_mu;
    std::mutex mu;
    std::condition_variable cv;
    int running = 0;
    std::exception_ptr failure;
    std::vector<std::thread> threads;
    for (auto& p : parts) {
      if (p->done >= p->end - p->begin) continue;
      ++running;
      threads.emplace_back([&, part = p.get()] {
        try {
          fetch_range_to_fd(hub, repo, revision, file.path, part->begin, part->end - part->begin, fd, part->done,
                            &progress, tuning, &stop, [&](const std::string& why) {
                              std::lock_guard<std::mutex> g(state_mu);
                              on_state(FileState::Retrying, why);
                            });
        } catch (...) {
          std::lock_guard<std::mutex> g(mu);
          if (!failure) failure = std::current_exception();
          stop = true;
        }
        std::lock_guard<std::mutex> g(mu);
        --running;
        cv.notify_all();
      });
    }
    {
      std::unique_lock<std::mutex> lk(mu);
      while (running > 0) {
        cv.wait_for(lk, std::chrono::duration<double>(tuning.checkpoint_interval_s));
        if (cancel && cancel->load()) stop = true;
        lk.unlock();
        try {
          checkpoint();
        } catch (const Error&) {
          // The state file could not be rewritten (a full disk, most likely): the one saved last
          // still holds, claiming less than is on disk; the parts' own writes report the cause.
        }
        lk.lock();
      }
    }
    for (auto& t : threads) t.join();
    try {
      checkpoint();
    } catch (const Error&) {
      // As above. Without a failure every byte is written: the hash check and the fsync
      // before publication decide, not the resume state.
    }
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const WriteError& e) {
        if (!e.disk_full()) throw;
        // Counted from the state file, not from what reached the disk since: a full disk can keep
        // the last state from being rewritten, and a resume starts where that state says.
        const uint64_t left = file.size - recorded;
        uint64_t free = 0;
        try {
          free = free_disk_bytes(fs::path(dest).parent_path().string());
        } catch (const Error&) {
        }
        throw Error("the disk holding " + fs::path(dest).parent_path().string() + " is full while downloading " + what +
                        ": " + format_bytes_exact(left) + " of it still to write, " + format_bytes_exact(free) +
                        " free (" + e.what_failed() + "); the " + format_bytes_exact(recorded) +
                        " downloaded and recorded so far are kept",
                    (left > free ? "free at least " + format_bytes(left - free) + " more (plus a margin)"
                                 : std::string("free some space")) +
                        " and run the same command again; it resumes where it stopped");
      }
    }
    if (cancel && cancel->load()) throw Error("cancelled while fetching " + what);

    on_state(FileState::Verifying, "");
    const std::string got = hash_file(partial_path(dest), file.hash_kind());
    if (got == file.expected_hash()) {
      if (::fsync(fd) != 0)
        throw Error("cannot flush " + partial_path(dest) + ": " + std::strerror(errno), "check the disk");
      if (::rename(partial_path(dest).c_str(), dest.c_str()) != 0)
        throw Error("cannot publish " + dest + ": " + std::strerror(errno), "check permissions");
      fsync_dir_of(dest);
      fs::remove(state_path(dest), ec);
      on_state(FileState::Verified, got);
      return;
    }
    const std::string detail = what + " does not match the hub listing: expected " +
                               (file.hash_kind() == HashKind::Sha256 ? "SHA-256 " : "git blob id ") +
                               file.expected_hash() + ", got " + got;
    discard(dest);
    progress -= file.size;
    if (round >= tuning.verify_attempts)
      throw Error(detail + " after " + std::to_string(round) + " downloads",
                  "the hub or a proxy on the way serves wrong bytes; try again later or use another --hub-url");
    on_state(FileState::Retrying, detail + "; fetching it again");
  }
}

}  // namespace deltafin
