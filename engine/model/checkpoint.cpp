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

namespace {

// The real K3 index names ~500k tensors: a SAX pass keeps parsing linear and
// avoids building a DOM of half a million nodes.
struct IndexSax : nlohmann::json_sax<nlohmann::json> {
  CheckpointIndex& idx;
  std::unordered_map<std::string, uint32_t>& shard_ids;
  std::string origin;
  int depth = 0;
  std::string section, current, error;
  bool saw_weight_map = false;

  IndexSax(CheckpointIndex& i, std::unordered_map<std::string, uint32_t>& s, std::string o)
      : idx(i), shard_ids(s), origin(std::move(o)) {}
  bool fail(const std::string& why) {
    error = why;
    return false;
  }
  bool value_at_depth2() const { return depth == 2 && !section.empty(); }
  bool null() override {
    return value_at_depth2() && section == "weight_map" ? fail("weight_map['" + current + "'] is not a file name")
                                                        : true;
  }
  bool boolean(bool) override { return null(); }
  bool number_integer(number_integer_t) override { return null(); }
  bool number_float(number_float_t, const string_t&) override { return null(); }
  bool binary(binary_t&) override { return null(); }
  bool number_unsigned(number_unsigned_t v) override {
    if (value_at_depth2() && section == "metadata" && current == "total_size") idx.total_size = v;
    return null();
  }
  bool string(string_t& file) override {
    if (!(value_at_depth2() && section == "weight_map")) return true;
    if (file.empty() || file.find('/') != std::string::npos || file.find("..") != std::string::npos)
      return fail("weight_map['" + current + "'] names an unsafe shard path '" + file + "'");
    auto [pos, inserted] = shard_ids.try_emplace(file, static_cast<uint32_t>(shard_ids.size()));
    idx.tensor_shard[current] = pos->second;
    return true;
  }
  bool start_object(std::size_t) override {
    ++depth;
    if (depth == 2 && current == "weight_map") saw_weight_map = true;
    if (depth == 2) section = current;
    return true;
  }
  bool end_object() override {
    if (depth == 2) section.clear();
    --depth;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth == 1 && current == "weight_map") return fail("weight_map is not an object");
    ++depth;
    return true;
  }
  bool end_array() override {
    --depth;
    return true;
  }
  bool key(string_t& k) override {
    current = std::move(k);
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    return fail(std::string("is not valid JSON: ") + e.what());
  }
};

}  // namespace

CheckpointIndex CheckpointIndex::parse(const std::string& text, const std::string& origin) {
  CheckpointIndex idx;
  std::unordered_map<std::string, uint32_t> shard_ids;
  idx.tensor_shard.reserve(text.size() / 100);
  IndexSax sax(idx, shard_ids, origin);
  const bool ok = nlohmann::json::sax_parse(text, &sax);
  if (!ok || !sax.error.empty())
    throw Error(origin + ": " + (sax.error.empty() ? "is not valid JSON" : sax.error),
                "re-download the checkpoint index");
  if (!sax.saw_weight_map) throw Error(origin + " has no weight_map object", "re-download the checkpoint index");
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
        throw Error(
            "tensor " + name + " is listed in the index for " + idx.shards[shard] + " but the shard does not hold it",
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
      throw Error("shard " + shard_names_[shard] + " changed size while open",
                  "do not modify model files while Deltafin runs");
  }
  return *m;
}

const uint8_t* Checkpoint::data(const CatalogEntry& e) const { return mapping(e.shard).data() + e.file_offset(); }

}  // namespace deltafin
