#include "model/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"

namespace fs = std::filesystem;

namespace deltafin {

CheckpointIndex CheckpointIndex::parse(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(origin + " is not valid JSON: " + e.what(), "re-download the checkpoint index");
  }
  auto wm = j.find("weight_map");
  if (!j.is_object() || wm == j.end() || !wm->is_object())
    throw Error(origin + " has no weight_map object", "re-download the checkpoint index");
  CheckpointIndex idx;
  if (auto md = j.find("metadata"); md != j.end() && md->is_object()) {
    if (auto ts = md->find("total_size"); ts != md->end() && ts->is_number_unsigned()) idx.total_size = ts->get<uint64_t>();
  }
  std::unordered_map<std::string, uint32_t> shard_ids;
  idx.tensor_shard.reserve(wm->size());
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string()) throw Error(origin + ": weight_map['" + it.key() + "'] is not a file name");
    const auto& file = it.value().get_ref<const std::string&>();
    if (file.empty() || file.find('/') != std::string::npos || file.find("..") != std::string::npos)
      throw Error(origin + ": weight_map['" + it.key() + "'] names an unsafe shard path '" + file + "'");
    auto [pos, inserted] = shard_ids.try_emplace(file, static_cast<uint32_t>(shard_ids.size()));
    idx.tensor_shard.emplace(it.key(), pos->second);
  }
  // Renumber shards in sorted name order so indices are stable.
  std::vector<std::string> names(shard_ids.size());
  for (auto& [name, id] : shard_ids) names[id] = name;
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint32_t> remap(names.size());
  for (uint32_t i = 0; i < names.size(); ++i)
    remap[i] = static_cast<uint32_t>(std::lower_bound(sorted.begin(), sorted.end(), names[i]) - sorted.begin());
  for (auto& [name, id] : idx.tensor_shard) id = remap[id];
  idx.shards = std::move(sorted);
  return idx;
}

CheckpointIndex CheckpointIndex::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path, "check the model folder (deltafin doctor)");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

uint64_t CatalogEntry::file_offset() const { return shard_data_start + info->begin; }

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir) {
  auto ck = std::make_unique<Checkpoint>();
  ck->dir_ = dir;
  const std::string index_path = dir + "/model.safetensors.index.json";
  CheckpointIndex idx;
  bool have_index = fs::exists(index_path);
  if (have_index) {
    idx = CheckpointIndex::load(index_path);
    ck->shard_names_ = idx.shards;
  } else if (fs::exists(dir + "/model.safetensors")) {
    ck->shard_names_ = {"model.safetensors"};
  } else {
    throw Error("no model.safetensors.index.json or model.safetensors in " + dir,
                "point --model-root at a model folder, or install one with deltafin setup");
  }
  for (uint32_t s = 0; s < ck->shard_names_.size(); ++s) {
    const std::string path = ck->shard_path(s);
    if (!fs::exists(path))
      throw Error("shard " + ck->shard_names_[s] + " listed in the index is missing from " + dir,
                  "finish or repair the install with deltafin setup");
    ck->headers_.push_back(SafetensorsHeader::read(path));
  }
  ck->maps_.resize(ck->shard_names_.size());
  for (uint32_t s = 0; s < ck->headers_.size(); ++s) {
    for (const auto& t : ck->headers_[s].tensors) {
      if (have_index) {
        auto it = idx.tensor_shard.find(t.name);
        if (it == idx.tensor_shard.end() || it->second != s)
          continue;  // not claimed by the index for this shard: ignore stray copies
      }
      CatalogEntry e;
      e.shard = s;
      e.info = &t;
      e.shard_data_start = ck->headers_[s].data_start;
      if (!ck->entries_.emplace(t.name, e).second)
        throw Error("tensor " + t.name + " appears twice in " + dir, "re-download the checkpoint");
    }
  }
  if (have_index) {
    for (const auto& [name, shard] : idx.tensor_shard)
      if (!ck->entries_.count(name))
        throw Error("tensor " + name + " is listed in the index for " + idx.shards[shard] + " but the shard does not hold it",
                    "the shard is from another revision; re-download it");
  }
  return ck;
}

const CatalogEntry* Checkpoint::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [n, e] : entries_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

const MappedFile& Checkpoint::mapping(uint32_t shard) const {
  std::lock_guard<std::mutex> lk(map_mu_);
  auto& m = maps_.at(shard);
  if (!m) {
    m = std::make_unique<MappedFile>(shard_path(shard));
    if (m->size() != headers_[shard].file_size)
      throw Error("shard " + shard_names_[shard] + " changed size while open", "do not modify model files while Deltafin runs");
  }
  return *m;
}

const uint8_t* Checkpoint::data(const CatalogEntry& e) const { return mapping(e.shard).data() + e.file_offset(); }

}  // namespace deltafin
