#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "install/hub_client.h"
#include "install/install_events.h"
#include "install/pinned_repos.h"
#include "install/range_fetch.h"

namespace deltafin {

struct SetupOptions {
  enum class Mode { Full, Stream };
  Mode mode = Mode::Full;
  bool k3 = true;           // false: add-ons only (DSpark if with_dspark, Qwen if include_qwen; neither: Qwen)
  bool with_dspark = true;  // DSpark is part of every K3 setup unless --without-dspark
  bool include_qwen = false;
  bool dry_run = false;
  std::string model_root;  // already resolved (resolve_model_root)
  HubOptions hub;
  std::string k3_repo, dspark_repo;     // empty: the pinned ones
  std::vector<std::string> qwen_repos;  // empty: the pinned ones
  std::string revision;                 // empty: each repo's pinned revision
  uint64_t cache_cap = 0;               // stream: expert cache cap; 0 picks a default from free space
  uint64_t space_margin = 1ull << 30;   // kept free on the disk
  FetchTuning tuning;
};

struct PlannedFile {
  HubFile file;
  bool stream_shard = false;  // fetched sparsely: header + non-expert tensors only
};

struct PlannedRepo {
  RepoRole role = RepoRole::K3;
  std::string repo, revision, folder;
  bool stream = false;
  std::vector<PlannedFile> files;
  uint64_t listed_bytes = 0;   // sum of the listing's sizes
  uint64_t install_bytes = 0;  // bytes that will sit on disk (stream: spine only)
  uint64_t missing_bytes = 0;  // of install_bytes, not yet on disk
  int shards = 0;
  uint64_t expert_bytes = 0;         // stream: routed-expert bytes left to the cache
  int layers = 0, experts = 0;       // stream: presence index dimensions
  std::vector<std::string> skipped;  // listed names the model format does not use: never written
};

struct SetupPlan {
  std::string model_root;
  std::vector<PlannedRepo> repos;
  uint64_t install_bytes = 0, missing_bytes = 0, free_bytes = 0, cache_cap = 0;
  std::string describe() const;  // human-readable, with the numbers
};

// Lists every repository (network) and works out sizes against what is already on disk; writes nothing.
SetupPlan plan_setup(const SetupOptions& opt, const HubClient& hub);

// The whole install: lock, plan, disk check, downloads with verification,
// install record, stream marker. Throws Error (also reported to `obs`) on failure.
SetupPlan run_setup(const SetupOptions& opt, InstallObserver& obs, const std::atomic<bool>* cancel = nullptr);

// The default stream cache cap for a disk with `free_after_install` bytes left.
uint64_t default_stream_cap(uint64_t free_after_install);

}  // namespace deltafin
