#include "install/install_manifest.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/model_root.h"

namespace fs = std::filesystem;

namespace deltafin {

const InstalledFile* InstalledRepo::find(const std::string& p) const {
  for (const auto& f : files)
    if (f.path == p) return &f;
  return nullptr;
}

std::string InstallManifest::path(const std::string& model_root) { return state_dir(model_root) + "/installed.json"; }

InstallManifest InstallManifest::load(const std::string& model_root) {
  InstallManifest m;
  const std::string p = path(model_root);
  if (!fs::exists(p)) return m;
  try {
    auto j = nlohmann::json::parse(read_text_file(p));
    m.hub_url = j.value("hub_url", "");
    for (const auto& r : j.at("repos")) {
      InstalledRepo ir;
      ir.role = role_from_name(r.at("role").get<std::string>());
      ir.repo = r.at("repo").get<std::string>();
      ir.revision = r.at("revision").get<std::string>();
      ir.folder = r.at("folder").get<std::string>();
      ir.mode = r.at("mode").get<std::string>();
      ir.complete = r.at("complete").get<bool>();
      for (const auto& f : r.at("files"))
        ir.files.push_back({f.at("path").get<std::string>(), f.at("size").get<uint64_t>(),
                            f.at("hash").get<std::string>(), f.at("hash_kind").get<std::string>() == "sha256",
                            f.at("state").get<std::string>()});
      m.repos.push_back(std::move(ir));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(p + " is damaged: " + e.what(), "run deltafin setup again; it re-checks every file");
  }
  return m;
}

void InstallManifest::save(const std::string& model_root) const {
  nlohmann::json j;
  j["format"] = 1;
  j["hub_url"] = hub_url;
  j["repos"] = nlohmann::json::array();
  for (const auto& r : repos) {
    nlohmann::json jr = {{"role", role_name(r.role)}, {"repo", r.repo}, {"revision", r.revision},
                         {"folder", r.folder},        {"mode", r.mode}, {"complete", r.complete}};
    jr["files"] = nlohmann::json::array();
    for (const auto& f : r.files)
      jr["files"].push_back({{"path", f.path},
                             {"size", f.size},
                             {"hash", f.hash},
                             {"hash_kind", f.sha256 ? "sha256" : "git-sha1"},
                             {"state", f.state}});
    j["repos"].push_back(jr);
  }
  fs::create_directories(state_dir(model_root));
  write_file_atomically(path(model_root), j.dump(2) + "\n");
}

InstalledRepo* InstallManifest::find_folder(const std::string& folder) {
  for (auto& r : repos)
    if (r.folder == folder) return &r;
  return nullptr;
}

const InstalledRepo* InstallManifest::find_role(RepoRole role) const {
  for (const auto& r : repos)
    if (r.role == role) return &r;
  return nullptr;
}

}  // namespace deltafin
