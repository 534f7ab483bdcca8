#include "install/pinned_repos.h"

#include <cctype>

#include "base/error.h"

namespace deltafin {

namespace {
// Revisions are full commit ids so that a moved branch can never change what is installed.
constexpr PinnedRepo kPinned[] = {
    {RepoRole::K3, "moonshotai/Kimi-K3", "2496450e92e425c886db095102a52a6682ca3970", "kimi-k3",
     "Kimi K3, 1.56 TB in 96 shards"},
    {RepoRole::DSpark, "Inferact/Kimi-K3-DSpark", "cf6b8244620e7ea4b0651d214f28e89eac75bed6", "kimi-k3-dspark",
     "DSpark block drafter for K3"},
    {RepoRole::Qwen, "Qwen/Qwen3-0.6B-Base", "da87bfb608c14b7cf20ba1ce41287e8de496c0cd", "qwen3-0.6b-base",
     "Qwen3 0.6B base (small drafter / test model)"},
    {RepoRole::Qwen, "Qwen/Qwen3-1.7B-Base", "ea980cb0a6c2ae4b936e82123acc929f1cec04c1", "qwen3-1.7b-base",
     "Qwen3 1.7B base (small drafter / test model)"},
};
}  // namespace

std::span<const PinnedRepo> pinned_repos() { return kPinned; }

const PinnedRepo& pinned(RepoRole role) {
  for (const auto& p : kPinned)
    if (p.role == role) return p;
  throw Error("no pinned repository for role " + std::string(role_name(role)));
}

const char* role_name(RepoRole role) {
  switch (role) {
    case RepoRole::K3:
      return "k3";
    case RepoRole::DSpark:
      return "dspark";
    case RepoRole::Qwen:
      return "qwen";
  }
  return "?";
}

RepoRole role_from_name(const std::string& name) {
  if (name == "k3") return RepoRole::K3;
  if (name == "dspark") return RepoRole::DSpark;
  if (name == "qwen") return RepoRole::Qwen;
  throw Error("unknown repository role '" + name + "'", "the install record may be from a newer deltafin");
}

std::string folder_for_repo(const std::string& repo) {
  for (const auto& p : kPinned)
    if (repo == p.repo) return p.folder;
  std::string name = repo.substr(repo.find('/') + 1);
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw Error("repository name '" + repo + "' is not of the form owner/name",
                "check --k3-repo, --dspark-repo, --qwen-repos");
  return name;
}

}  // namespace deltafin
