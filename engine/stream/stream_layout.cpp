#include "stream/stream_layout.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/error.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "stream/stream_presence.h"

namespace deltafin {

namespace {

bool take_int(std::string_view& s, int& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec != std::errc() || r.ptr == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(r.ptr - s.data()));
  return true;
}

bool take(std::string_view& s, std::string_view lit) {
  if (s.substr(0, lit.size()) != lit) return false;
  s.remove_prefix(lit.size());
  return true;
}

}  // namespace

std::optional<ExpertTensorName> parse_expert_tensor_name(std::string_view name) {
  auto at = name.find("layers.");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view s = name.substr(at + 7);
  ExpertTensorName t;
  if (!take_int(s, t.layer) || !take(s, ".block_sparse_moe.experts.") || !take_int(s, t.expert) || !take(s, ".w"))
    return std::nullopt;
  int w = 0;
  if (!take_int(s, w) || w < 1 || w > 3) return std::nullopt;
  int kind;
  if (s == ".weight_packed") kind = 0;
  else if (s == ".weight_scale") kind = 1;
  else return std::nullopt;
  t.part = (w - 1) * 2 + kind;
  if (t.layer < 0 || t.expert < 0) return std::nullopt;
  return t;
}

StreamShape stream_shape(const std::string& config_json, const std::vector<std::string>& tensor_names,
                         const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(origin + " is not valid JSON: " + e.what(), "re-download config.json");
  }
  const nlohmann::json& t = j.contains("text_config") ? j["text_config"] : j;
  auto get = [&](const char* key) -> int64_t {
    if (!t.contains(key) || !t[key].is_number_integer() || t[key].get<int64_t>() <= 0 ||
        t[key].get<int64_t>() > (1 << 24))
      throw Error(origin + ": " + key + " is missing or not a positive integer", "re-download config.json");
    return t[key].get<int64_t>();
  };
  StreamShape s;
  s.layers = static_cast<int>(get("num_hidden_layers"));
  s.experts = static_cast<int>(get("num_experts"));
  // The presence table is layers x experts: bounded like every table the loader reads.
  check_stream_table_shape(uint64_t(s.layers), uint64_t(s.experts), 0, origin);
  const uint64_t inter = static_cast<uint64_t>(get("moe_intermediate_size"));
  const uint64_t latent = static_cast<uint64_t>(get("routed_expert_hidden_size"));
  if (inter % 32 || latent % 32)
    throw Error(origin + ": expert sizes are not multiples of the MXFP4 group (32)", "re-download config.json");
  auto mat = [](uint64_t out, uint64_t in) { return out * in / 2 + out * in / 32; };
  s.bytes_per_expert = 2 * mat(inter, latent) + mat(latent, inter);
  std::set<std::pair<int, int>> seen;
  for (const auto& name : tensor_names) {
    auto e = parse_expert_tensor_name(name);
    if (!e) continue;
    if (e->layer >= s.layers || e->expert >= s.experts)
      throw Error(origin + ": tensor " + name + " lies outside " + std::to_string(s.layers) + " layers x " +
                      std::to_string(s.experts) + " experts",
                  "the checkpoint does not match its config");
    seen.insert({e->layer, e->expert});
  }
  s.expert_count = seen.size();
  return s;
}

ShardSpine shard_spine(const SafetensorsHeader& h) {
  ShardSpine sp;
  std::vector<std::pair<uint64_t, uint64_t>> r;
  r.emplace_back(0, h.data_start);  // the header itself
  for (const auto& t : h.tensors) {
    if (parse_expert_tensor_name(t.name)) {
      sp.has_experts = true;
      continue;
    }
    if (t.end > t.begin) r.emplace_back(h.data_start + t.begin, h.data_start + t.end);
  }
  std::sort(r.begin(), r.end());
  for (const auto& x : r) {
    if (!sp.ranges.empty() && x.first <= sp.ranges.back().second)
      sp.ranges.back().second = std::max(sp.ranges.back().second, x.second);
    else sp.ranges.push_back(x);
  }
  for (const auto& x : sp.ranges) sp.bytes += x.second - x.first;
  return sp;
}

std::vector<std::vector<ExpertLocation>> expert_locations(const Checkpoint& ck, int layers, int experts) {
  std::vector<std::vector<ExpertLocation>> loc(static_cast<size_t>(layers));
  std::vector<std::vector<uint8_t>> seen(static_cast<size_t>(layers));
  for (uint32_t s = 0; s < ck.shard_names().size(); ++s) {
    const SafetensorsHeader& h = ck.shard_header(s);
    for (const auto& t : h.tensors) {
      auto e = parse_expert_tensor_name(t.name);
      if (!e) continue;
      if (e->layer >= layers || e->expert >= experts)
        throw Error("shard " + ck.shard_names()[s] + " holds " + t.name + ", outside the configured " +
                        std::to_string(layers) + " layers x " + std::to_string(experts) + " experts",
                    "the checkpoint does not match its config.json; re-download it");
      auto& row = loc[static_cast<size_t>(e->layer)];
      if (row.empty()) {
        row.resize(static_cast<size_t>(experts));
        seen[static_cast<size_t>(e->layer)].assign(static_cast<size_t>(experts), 0);
      }
      ExpertLocation& L = row[static_cast<size_t>(e->expert)];
      uint8_t& mask = seen[static_cast<size_t>(e->layer)][static_cast<size_t>(e->expert)];
      if (mask && L.shard != s)
        throw Error("expert " + t.name + " is split across shards", "the checkpoint layout is not supported");
      L.shard = s;
      L.part_offset[e->part] = h.data_start + t.begin;
      L.part_bytes[e->part] = t.end - t.begin;
      mask |= static_cast<uint8_t>(1u << e->part);
    }
  }
  for (size_t l = 0; l < loc.size(); ++l) {
    for (size_t x = 0; x < loc[l].size(); ++x) {
      if (seen[l][x] != 0x3F)
        throw Error("layer " + std::to_string(l) + " expert " + std::to_string(x) + " lacks some of its six tensors",
                    "the checkpoint is incomplete; re-download it");
      ExpertLocation& L = loc[l][x];
      L.offset = L.part_offset[0];
      L.contiguous = true;
      uint64_t total = 0;
      for (int p = 0; p < 6; ++p) {
        total += L.part_bytes[p];
        if (p && L.part_offset[p] != L.part_offset[p - 1] + L.part_bytes[p - 1]) L.contiguous = false;
      }
      L.bytes = total;
    }
  }
  return loc;
}

}  // namespace deltafin
