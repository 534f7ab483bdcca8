#pragma once
#include <functional>
#include <string>

namespace deltafin {

struct UpgradeOptions {
  std::string source_dir;  // the git checkout (default: where this binary was built from)
  std::string build_dir;   // its CMake build folder (default: where this binary was built)
  bool dry_run = false;    // check and report, change nothing
  bool build = true;       // rebuild after the fast-forward
  int jobs = 0;            // build parallelism; 0: CMake's default
};

struct UpgradeResult {
  enum class Outcome { UpToDate, Upgraded, WouldUpgrade, AheadOfUpstream };
  Outcome outcome = Outcome::UpToDate;
  std::string branch, upstream, from, to;
  int commits = 0;
};

// Fast-forwards a clean checkout to its upstream and rebuilds it with the CMake
// configuration it was built with. Refuses (Error saying why and what to do)
// a dirty, detached or diverged checkout, and stops at anything unexpected.
// Never touches models or caches. `say` hears progress lines.
UpgradeResult run_upgrade(const UpgradeOptions& opt, const std::function<void(const std::string&)>& say);

}  // namespace deltafin
