#pragma once
#include <span>
#include <string>

namespace deltafin {

enum class RepoRole { K3, DSpark, Qwen };

// One repository deltafin installs, at the exact revision it was tested with.
// This table is the single source of truth (docs/INSTALL.md mirrors it).
struct PinnedRepo {
  RepoRole role;
  const char* repo;
  const char* revision;
  const char* folder;  // under the model root
  const char* what;
};

std::span<const PinnedRepo> pinned_repos();
const PinnedRepo& pinned(RepoRole role);  // the first entry of that role
const char* role_name(RepoRole role);     // "k3", "dspark", "qwen"
RepoRole role_from_name(const std::string& name);
// Folder for a repository that is not in the table (mirrors, tests): its lower-cased name part.
std::string folder_for_repo(const std::string& repo);

}  // namespace deltafin
