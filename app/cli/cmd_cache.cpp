// `deltafin cache list|size|warm|evict|verify`: the stream install's expert cache.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "commands.h"
#include "install/disk_space.h"
#include "install/doctor.h"
#include "install/hub_client.h"
#include "model/model_root.h"
#include "store/stream_expert_source.h"

namespace deltafin::cli {

namespace {

struct CacheOpts {
  std::string root, hub_url, experts, to;
  int layer = -1;
  bool all = false, json = false, fetch = false;
  std::vector<std::string> shards;  // cache verify --shard
};

StreamCache open_cache(const CacheOpts& o, bool offline) {
  StreamCacheOptions so = StreamCacheOptions::from_env();
  so.offline = offline;
  if (!o.hub_url.empty()) so.hub_url = resolve_hub_url(o.hub_url);
  return open_stream_cache(resolve_model_root(o.root), so);
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> v;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    try {
      size_t used = 0;
      int x = std::stoi(item, &used);
      if (used != item.size() || x < 0) throw std::invalid_argument(item);
      v.push_back(x);
    } catch (const std::exception&) {
      throw Error("'" + item + "' in --experts is not an expert number", "write them like --experts 0,5,17");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return v;
}

void print_size(const CacheOpts& o) {
  auto c = open_cache(o, true);
  const auto& s = *c.source;
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"cached_bytes", s.cached_bytes()},
                                       {"cached_experts", s.cached_experts()},
                                       {"cap_bytes", s.cap_bytes()}}
                            .dump()
                            .c_str());
  } else {
    std::printf("%zu experts cached, %s of a %s cap\n", s.cached_experts(),
                format_bytes_exact(s.cached_bytes()).c_str(), format_bytes(s.cap_bytes()).c_str());
  }
}

void print_list(const CacheOpts& o) {
  auto c = open_cache(o, true);
  std::map<int, std::vector<int>> by_layer;
  for (const auto& e : c.source->list()) by_layer[e.layer].push_back(e.expert);
  if (o.json) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [l, v] : by_layer) j[std::to_string(l)] = v;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  if (by_layer.empty()) std::printf("the expert cache is empty\n");
  for (const auto& [l, v] : by_layer) {
    std::printf("layer %3d: %zu experts:", l, v.size());
    for (int e : v) std::printf(" %d", e);
    std::printf("\n");
  }
}

void warm(const CacheOpts& o) {
  auto c = open_cache(o, false);
  auto& s = *c.source;
  std::vector<int> layers;
  if (o.all) {
    for (int l = 0; l < s.layer_count(); ++l)
      if (s.experts_in_layer(l) > 0) layers.push_back(l);
  } else {
    if (o.layer < 0 || o.layer >= s.layer_count() || s.experts_in_layer(o.layer) == 0)
      throw Error("cache warm needs --layer L of a layer with routed experts, or --all",
                  "see deltafin cache warm --help");
    layers.push_back(o.layer);
  }
  const uint64_t before = s.counters().bytes_fetched;
  size_t warmed = 0;
  for (int l : layers) {
    std::vector<int> experts = o.experts.empty() || o.all ? std::vector<int>{} : parse_list(o.experts);
    if (experts.empty())
      for (int e = 0; e < s.experts_in_layer(l); ++e) experts.push_back(e);
    s.warm(l, experts);
    warmed += experts.size();
    std::fprintf(stderr, "layer %d: %zu experts cached\n", l, experts.size());
  }
  std::printf(
      "fetched %s; the cache holds %s of a %s cap%s\n", format_bytes(s.counters().bytes_fetched - before).c_str(),
      format_bytes(s.cached_bytes()).c_str(), format_bytes(s.cap_bytes()).c_str(),
      s.cached_experts() < warmed ? " (the cap is smaller than all experts: the coldest were evicted again)" : "");
}

}  // namespace

void add_cache(CLI::App& app) {
  auto o = std::make_shared<CacheOpts>();
  auto* c = app.add_subcommand("cache", "Inspect, warm, evict and verify the stream install's expert cache");
  c->require_subcommand(1);
  auto common = [&](CLI::App* s) {
    s->add_option("--model-root", o->root,
                  "K3's folder (default $DELTAFIN_MODEL_ROOT or ~/.local/share/deltafin/models/kimi-k3)");
    s->add_flag("--json", o->json, "JSON output");
  };
  auto* list = c->add_subcommand("list", "Cached experts by layer");
  common(list);
  list->callback([o] { print_list(*o); });
  auto* size = c->add_subcommand("size", "Bytes cached and the cap");
  common(size);
  size->callback([o] { print_size(*o); });
  auto* w = c->add_subcommand("warm", "Fetch experts now, so that later (or offline) runs need no network");
  common(w);
  w->add_option("--layer", o->layer, "Layer to warm");
  w->add_option("--experts", o->experts, "Comma-separated experts (default: all of the layer)");
  w->add_flag("--all", o->all, "Every expert of every layer (as far as the cap allows)");
  w->add_option("--hub-url", o->hub_url, "Hub base URL (default: the one setup used)");
  w->callback([o] { warm(*o); });
  auto* ev = c->add_subcommand("evict", "Drop cached experts, coldest first, punching holes in the shard files");
  common(ev);
  ev->add_option("--to", o->to, "Shrink the cache to this size (e.g. 100G)");
  ev->add_flag("--all", o->all, "Drop every cached expert");
  ev->callback([o] {
    if (o->to.empty() && !o->all) throw Error("cache evict needs --to SIZE or --all");
    auto cache = open_cache(*o, true);
    size_t in_use = 0;
    uint64_t freed = cache.source->evict_to(o->all ? 0 : parse_size(o->to), &in_use);
    std::printf("evicted %s; cache holds %s\n", format_bytes(freed).c_str(),
                format_bytes(cache.source->cached_bytes()).c_str());
    if (in_use)
      std::printf("kept %zu expert%s in use by a running engine; they can be evicted once it lets go of them\n", in_use,
                  in_use == 1 ? "" : "s");
  });
  auto* v = c->add_subcommand("verify", "Check the cache index against the files and hash complete shards");
  common(v);
  auto* fetch = v->add_flag("--fetch", o->fetch,
                            "Fetch what each shard lacks, so that every shard is checked against the Hub's SHA-256");
  // On K3, --fetch downloads every expert (1.4 TB); one shard is about 15 GB.
  v->add_option("--shard", o->shards,
                "Fetch what this shard lacks and check only it against the Hub's SHA-256 (repeatable)")
      ->excludes(fetch);
  v->add_option("--hub-url", o->hub_url, "Hub base URL (default: the one setup used)");
  v->callback([o] {
    const std::string root = resolve_model_root(o->root);
    std::vector<std::string> problems;
    if (StreamMarker::find(root) && !o->shards.empty()) {
      auto cache = open_cache(*o, false);
      const auto shards = cache.source->shard_integrity();
      for (const auto& name : o->shards) {
        const auto it = std::find_if(shards.begin(), shards.end(), [&](const auto& s) { return s.name == name; });
        if (it == shards.end())
          throw Error("the stream install has no shard named " + name,
                      "deltafin doctor names the unverified shards; give one of those");
        try {
          cache.source->verify_shard(static_cast<uint32_t>(it - shards.begin()));
          std::printf("%s: complete and verified against the Hub's SHA-256\n", name.c_str());
        } catch (const Error& e) {
          problems.push_back(e.what_failed());
        }
      }
    } else if (!o->shards.empty()) {
      throw Error("--shard applies to stream installs only", "on a full install, cache verify re-hashes every file");
    } else if (StreamMarker::find(root)) {
      auto cache = open_cache(*o, !o->fetch);
      problems = cache.source->verify(o->fetch);
      size_t verified = 0;
      uint64_t unverified_bytes = 0;
      const auto shards = cache.source->shard_integrity();
      for (const auto& s : shards) {
        if (s.verified) ++verified;
        else unverified_bytes += s.present_bytes;
      }
      std::printf("%zu of %zu shards verified against the Hub's SHA-256; %s on disk not yet verified%s\n", verified,
                  shards.size(), format_bytes(unverified_bytes).c_str(),
                  verified < shards.size() && !o->fetch ? " (--fetch completes and checks them)" : "");
    } else {
      auto rep = run_doctor(root, true);
      for (const auto& f : rep.findings)
        if (f.level == DoctorFinding::Level::Problem) problems.push_back(f.subject + ": " + f.detail);
    }
    for (const auto& p : problems) std::printf("PROBLEM %s\n", p.c_str());
    if (problems.empty()) std::printf("verified: no problems\n");
    exit_code = problems.empty() ? 0 : 1;
  });
}

}  // namespace deltafin::cli
