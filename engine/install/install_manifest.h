#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "install/pinned_repos.h"

namespace deltafin {

// <model-root>/.deltafin/installed.json: what setup installed and verified.
// doctor reads it offline; the GUI shows it.
struct InstalledFile {
  std::string path;
  uint64_t size = 0;
  std::string hash;    // the listing's SHA-256 (LFS) or git blob id
  bool sha256 = true;  // which of the two `hash` is
  std::string state;   // "verified" (whole file, hash checked) or "sparse" (stream shard: spine only)
};

struct InstalledRepo {
  RepoRole role = RepoRole::K3;
  std::string repo, revision, folder;
  std::string mode;       // "full" or "stream"
  bool complete = false;  // every listed file is in place
  std::vector<InstalledFile> files;
  const InstalledFile* find(const std::string& path) const;
};

struct InstallManifest {
  std::string hub_url;
  std::vector<InstalledRepo> repos;

  static std::string path(const std::string& model_root);
  static InstallManifest load(const std::string& model_root);  // empty when there is none
  void save(const std::string& model_root) const;
  InstalledRepo* find_folder(const std::string& folder);
  const InstalledRepo* find_role(RepoRole role) const;
};

}  // namespace deltafin
