#include "stream/stream_marker.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/model_root.h"

namespace fs = std::filesystem;

namespace deltafin {

std::string StreamMarker::path(const std::string& model_root) { return state_dir(model_root) + "/stream.json"; }
std::string StreamMarker::presence_path(const std::string& model_root) {
  return state_dir(model_root) + "/stream-presence.bin";
}

void StreamMarker::save(const std::string& model_root) const {
  nlohmann::json j;
  j["format"] = 1;
  j["hub_url"] = hub_url;
  j["repo"] = repo;
  j["revision"] = revision;
  j["cap_bytes"] = cap_bytes;
  j["shards"] = nlohmann::json::array();
  for (const auto& s : shards) j["shards"].push_back({{"name", s.name}, {"size", s.size}, {"sha256", s.sha256}});
  fs::create_directories(state_dir(model_root));
  write_file_atomically(path(model_root), j.dump(2) + "\n");
}

StreamMarker StreamMarker::load(const std::string& model_root) {
  const std::string p = path(model_root);
  try {
    auto j = nlohmann::json::parse(read_text_file(p));
    StreamMarker m;
    m.hub_url = j.at("hub_url").get<std::string>();
    m.repo = j.at("repo").get<std::string>();
    m.revision = j.at("revision").get<std::string>();
    m.cap_bytes = j.at("cap_bytes").get<uint64_t>();
    for (const auto& s : j.at("shards"))
      m.shards.push_back(
          {s.at("name").get<std::string>(), s.at("size").get<uint64_t>(), s.at("sha256").get<std::string>()});
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw Error(p + " is damaged: " + e.what(), "run deltafin setup --stream again");
  }
}

std::optional<StreamMarker> StreamMarker::find(const std::string& model_root) {
  if (!fs::exists(path(model_root))) return std::nullopt;
  return load(model_root);
}

}  // namespace deltafin
