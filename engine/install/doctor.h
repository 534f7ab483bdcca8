#pragma once
#include <functional>
#include <string>
#include <vector>

namespace deltafin {

struct DoctorFinding {
  enum class Level { Ok, Note, Problem };
  Level level = Level::Ok;
  std::string subject;  // "k3", "dspark", "backend", "disk" ...
  std::string detail;
  std::string fix;  // what to do; empty when nothing is needed
};

struct DoctorReport {
  std::string model_root;
  std::vector<DoctorFinding> findings;
  bool healthy() const;      // no Problem
  std::string text() const;  // for people
  std::string json() const;  // for scripts and the GUI
};

// Audits an install without the network: what is installed, complete and
// verified, what the stream cache holds, which compute backends are usable,
// and what to do about each problem. `verify_hashes` re-hashes every file
// (slow for a full install: 1.56 TB are read); `progress` hears which file.
DoctorReport run_doctor(const std::string& model_root, bool verify_hashes,
                        const std::function<void(const std::string&)>& progress = {});

}  // namespace deltafin
