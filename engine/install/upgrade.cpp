#include "install/upgrade.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "base/error.h"
#include "deltafin/build_info.h"
#include "install/subprocess.h"

namespace fs = std::filesystem;

namespace deltafin {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

struct Git {
  std::string dir;
  ProcessResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"git", "-C", dir});
    return run_command(args);
  }
  // A git command that must succeed; anything else stops the upgrade before it changes a thing.
  std::string must(std::vector<std::string> args, const std::string& doing) const {
    ProcessResult r = run(args);
    if (r.code != 0)
      throw Error("git failed while " + doing + ": " + trim(r.err.empty() ? r.out : r.err),
                  "nothing was changed; fix the checkout by hand and run deltafin upgrade again");
    return trim(r.out);
  }
};

std::map<std::string, std::string> read_cmake_cache(const std::string& build_dir) {
  std::map<std::string, std::string> vars;
  std::ifstream f(build_dir + "/CMakeCache.txt");
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '/') continue;
    auto colon = line.find(':'), eq = line.find('=');
    if (colon == std::string::npos || eq == std::string::npos || colon > eq) continue;
    vars[line.substr(0, colon)] = line.substr(eq + 1);
  }
  return vars;
}

bool truthy(const std::string& v) {
  std::string u;
  for (char c : v) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u == "ON" || u == "TRUE" || u == "1" || u == "YES" || u == "Y";
}

void echo_line(const std::string& line, void* ctx) {
  (*static_cast<const std::function<void(const std::string&)>*>(ctx))(line);
}

}  // namespace

UpgradeResult run_upgrade(const UpgradeOptions& in, const std::function<void(const std::string&)>& say) {
  UpgradeOptions opt = in;
  if (opt.source_dir.empty()) opt.source_dir = build_info::source_dir;
  if (opt.build_dir.empty()) opt.build_dir = build_info::binary_dir;
  Git git{opt.source_dir};
  UpgradeResult res;

  ProcessResult top = git.run({"rev-parse", "--show-toplevel"});
  if (top.code != 0)
    throw Error(opt.source_dir + " is not a git checkout",
                "deltafin upgrade updates a source checkout; reinstall packaged builds with your package manager");
  ProcessResult branch = git.run({"symbolic-ref", "-q", "--short", "HEAD"});
  if (branch.code != 0)
    throw Error("the checkout at " + opt.source_dir + " has a detached HEAD (at " +
                    git.must({"rev-parse", "--short", "HEAD"}, "reading HEAD") + ")",
                "switch to a branch first (git switch main), then run deltafin upgrade again");
  res.branch = trim(branch.out);
  const std::string dirty = git.must({"status", "--porcelain", "--untracked-files=no"}, "checking for local changes");
  if (!dirty.empty())
    throw Error("the checkout at " + opt.source_dir + " has uncommitted changes:\n" + dirty,
                "commit or stash them (git stash), then run deltafin upgrade again");
  ProcessResult up = git.run({"rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"});
  if (up.code != 0)
    throw Error("branch " + res.branch + " has no upstream to upgrade from",
                "set one: git branch --set-upstream-to origin/" + res.branch);
  res.upstream = trim(up.out);
  const std::string remote = git.must({"config", "branch." + res.branch + ".remote"}, "finding the upstream remote");
  say("Fetching " + remote + " ...");
  git.must({"fetch", "--quiet", remote}, "fetching " + remote);
  res.from = git.must({"rev-parse", "HEAD"}, "reading HEAD");
  res.to = git.must({"rev-parse", "@{upstream}"}, "reading the upstream");
  if (res.from == res.to) {
    say("Already up to date at " + res.from.substr(0, 12) + " (" + res.branch + ").");
    res.outcome = UpgradeResult::Outcome::UpToDate;
    return res;
  }
  const bool behind = git.run({"merge-base", "--is-ancestor", "HEAD", "@{upstream}"}).code == 0;
  const bool ahead = git.run({"merge-base", "--is-ancestor", "@{upstream}", "HEAD"}).code == 0;
  const std::string counts =
      git.must({"rev-list", "--left-right", "--count", "HEAD...@{upstream}"}, "counting commits");
  int local_only = 0, upstream_only = 0;
  std::sscanf(counts.c_str(), "%d %d", &local_only, &upstream_only);
  if (ahead) {
    say("Branch " + res.branch + " is " + std::to_string(local_only) + " commit(s) ahead of " + res.upstream +
        "; nothing to upgrade.");
    res.outcome = UpgradeResult::Outcome::AheadOfUpstream;
    res.to = res.from;
    return res;
  }
  if (!behind)
    throw Error(
        "branch " + res.branch + " and " + res.upstream + " have diverged (" + std::to_string(local_only) +
            " local and " + std::to_string(upstream_only) + " upstream commits)",
        "deltafin upgrade only fast-forwards; rebase your commits (git pull --rebase) or reset the branch by hand");
  res.commits = upstream_only;

  // The configuration this tree was built with, so that a CUDA build stays a CUDA build.
  auto cache = read_cmake_cache(opt.build_dir);
  const bool same_build = fs::exists(opt.build_dir) && fs::exists(build_info::binary_dir) &&
                          fs::equivalent(opt.build_dir, build_info::binary_dir);
  std::vector<std::string> configure = {"cmake", "-S", opt.source_dir, "-B", opt.build_dir};
  std::string recorded_cuda;
  if (!cache.empty()) {
    recorded_cuda = cache.count("DELTAFIN_CUDA") ? cache["DELTAFIN_CUDA"] : "";
    if (same_build && truthy(recorded_cuda) != build_info::cuda)
      throw Error("the build folder " + opt.build_dir + " is now configured with DELTAFIN_CUDA=" + recorded_cuda +
                      " but this deltafin was built with " + (build_info::cuda ? "ON" : "OFF"),
                  "nothing was changed; reconfigure it by hand or pass --build-dir");
  } else if (same_build) {
    configure.insert(configure.end(),
                     {"-G", build_info::generator, std::string("-DCMAKE_BUILD_TYPE=") + build_info::build_type,
                      std::string("-DDELTAFIN_CUDA=") + (build_info::cuda ? "ON" : "OFF")});
    if (build_info::cuda && *build_info::cuda_architectures)
      configure.push_back(std::string("-DCMAKE_CUDA_ARCHITECTURES=") + build_info::cuda_architectures);
    recorded_cuda = build_info::cuda ? "ON" : "OFF";
  } else if (opt.build) {
    throw Error("no CMake configuration in " + opt.build_dir,
                "pass --build-dir with the folder you build in, or --no-build");
  }

  if (opt.dry_run) {
    say("Would fast-forward " + res.branch + " from " + res.from.substr(0, 12) + " to " + res.to.substr(0, 12) + " (" +
        std::to_string(res.commits) + " commits)" + (opt.build ? " and rebuild " + opt.build_dir : "") + ".");
    res.outcome = UpgradeResult::Outcome::WouldUpgrade;
    return res;
  }
  say("Fast-forwarding " + res.branch + " " + res.from.substr(0, 12) + " -> " + res.to.substr(0, 12) + " (" +
      std::to_string(res.commits) + " commits)");
  git.must({"merge", "--ff-only", "--quiet", "@{upstream}"}, "fast-forwarding");
  res.outcome = UpgradeResult::Outcome::Upgraded;
  if (!opt.build) return res;

  const std::string back = "the checkout is now at " + res.to.substr(0, 12) + "; to go back: git -C " + opt.source_dir +
                           " reset --hard " + res.from.substr(0, 12);
  say("Configuring " + opt.build_dir +
      " with its recorded settings (DELTAFIN_CUDA=" + (recorded_cuda.empty() ? "OFF" : recorded_cuda) + ")");
  ProcessResult cfg = run_command(configure, {}, echo_line, const_cast<std::function<void(const std::string&)>*>(&say));
  if (cfg.code != 0)
    throw Error("CMake configuration failed after the upgrade", back + ", or fix the error above and run cmake again");
  auto after = read_cmake_cache(opt.build_dir);
  if (truthy(after["DELTAFIN_CUDA"]) != truthy(recorded_cuda))
    throw Error("the rebuilt configuration lost DELTAFIN_CUDA=" + recorded_cuda, back);
  std::vector<std::string> build = {"cmake", "--build", opt.build_dir};
  if (opt.jobs > 0) build.insert(build.end(), {"--parallel", std::to_string(opt.jobs)});
  say("Building ...");
  ProcessResult b = run_command(build, {}, echo_line, const_cast<std::function<void(const std::string&)>*>(&say));
  if (b.code != 0)
    throw Error("the rebuild failed after the upgrade",
                back + ", or fix the error above and run cmake --build " + opt.build_dir);
  say("Upgraded to " + res.to.substr(0, 12) + " and rebuilt. Models and caches were not touched.");
  return res;
}

}  // namespace deltafin
