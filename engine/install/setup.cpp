#include "install/setup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "install/disk_space.h"
#include "install/file_download.h"
#include "install/file_hash.h"
#include "install/install_lock.h"
#include "install/install_manifest.h"
#include "model/model_root.h"
#include "install/progress_meter.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "stream/stream_layout.h"
#include "stream/stream_marker.h"
#include "stream/shared_stream_presence.h"
#include "stream/stream_presence.h"

namespace fs = std::filesystem;

namespace deltafin {

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kConfigName = "config.json";

struct Target {
  RepoRole role;
  std::string repo, revision;
};

std::vector<Target> targets(const SetupOptions& opt) {
  std::vector<Target> t;
  auto rev = [&](const char* pinned_rev) { return opt.revision.empty() ? std::string(pinned_rev) : opt.revision; };
  if (opt.k3) {
    const auto& k3 = pinned(RepoRole::K3);
    t.push_back({RepoRole::K3, opt.k3_repo.empty() ? k3.repo : opt.k3_repo, rev(k3.revision)});
    if (opt.with_dspark) {
      const auto& ds = pinned(RepoRole::DSpark);
      t.push_back({RepoRole::DSpark, opt.dspark_repo.empty() ? ds.repo : opt.dspark_repo, rev(ds.revision)});
    }
  } else if (opt.with_dspark) {
    // Add-ons only (the app's "Install add-ons"): DSpark into a folder that already holds K3.
    const auto& ds = pinned(RepoRole::DSpark);
    t.push_back({RepoRole::DSpark, opt.dspark_repo.empty() ? ds.repo : opt.dspark_repo, rev(ds.revision)});
  }
  // Without K3 and without DSpark, the add-ons are the Qwen drafters (setup-qwen).
  if (opt.include_qwen || (!opt.k3 && !opt.with_dspark)) {
    std::vector<const PinnedRepo*> qwen;
    for (const auto& p : pinned_repos())
      if (p.role == RepoRole::Qwen) qwen.push_back(&p);
    if (opt.qwen_repos.empty()) {
      for (const auto* q : qwen) t.push_back({RepoRole::Qwen, q->repo, rev(q->revision)});
    } else {
      for (size_t i = 0; i < opt.qwen_repos.size(); ++i)
        t.push_back(
            {RepoRole::Qwen, opt.qwen_repos[i], rev(i < qwen.size() ? qwen[i]->revision : qwen.back()->revision)});
    }
  }
  for (const auto& x : t)
    if (x.repo.find('/') == std::string::npos || x.repo.find("..") != std::string::npos || x.repo.front() == '/')
      throw Error("repository '" + x.repo + "' is not of the form owner/name",
                  "check --k3-repo, --dspark-repo, --qwen-repos");
  return t;
}

const HubFile* find_file(const std::vector<HubFile>& files, const std::string& path) {
  for (const auto& f : files)
    if (f.path == path) return &f;
  return nullptr;
}

std::string repo_dir(const std::string& root, const PlannedRepo& r) {
  return install_dir(root, r.role == RepoRole::K3, r.folder);
}

std::string short_rev(const std::string& rev) { return rev.size() == 40 ? rev.substr(0, 12) : rev; }

// Reads the header of a shard from the hub (two small ranged reads).
std::string fetch_header_bytes(const HubClient& hub, const PlannedRepo& r, const HubFile& f, const FetchTuning& tuning,
                               const std::atomic<bool>* cancel) {
  auto get = [&](uint64_t off, uint64_t len) {
    std::string out;
    with_retries(tuning, cancel, [&] {
      out.clear();
      hub.fetch_range(
          r.repo, r.revision, f.path, off, len,
          [&](const uint8_t* d, size_t n) {
            out.append(reinterpret_cast<const char*>(d), n);
            return true;
          },
          cancel);
    });
    return out;
  };
  if (f.size < 8)
    throw Error(r.repo + "/" + f.path + " is listed with " + std::to_string(f.size) +
                " bytes, too small for safetensors");
  std::string len8 = get(0, 8);
  uint64_t hl = 0;
  std::memcpy(&hl, len8.data(), 8);
  if (hl > kMaxSafetensorsHeader || 8 + hl > f.size)
    throw Error(r.repo + "/" + f.path + " declares a " + std::to_string(hl) + "-byte header, impossible for a " +
                    std::to_string(f.size) + "-byte file",
                "the hub serves a damaged file; try again later or use another --hub-url");
  return len8 + get(8, hl);
}

}  // namespace

uint64_t default_stream_cap(uint64_t free_after_install) {
  const uint64_t half = free_after_install / 2;
  const uint64_t ceiling = 500ull * 1000 * 1000 * 1000;  // beyond this a full install is the better choice
  return std::min(half, ceiling);
}

SetupPlan plan_setup(const SetupOptions& opt, const HubClient& hub) {
  SetupPlan plan;
  plan.model_root = opt.model_root;
  InstallManifest manifest = InstallManifest::load(opt.model_root);
  for (const auto& t : targets(opt)) {
    PlannedRepo r;
    r.role = t.role;
    r.repo = t.repo;
    r.revision = t.revision;
    r.folder = t.role == RepoRole::Qwen ? folder_for_repo(t.repo) : pinned(t.role).folder;
    r.stream = opt.mode == SetupOptions::Mode::Stream && t.role == RepoRole::K3;
    std::vector<HubFile> files;
    with_retries(opt.tuning, nullptr, [&] { files = hub.list_files(t.repo, t.revision); });
    // Only names the model format uses are written; a name of the installer's own is a lie.
    std::vector<HubFile> used;
    for (auto& f : files) {
      switch (repo_path_use(f.path)) {
        case RepoPathUse::Model:
          used.push_back(std::move(f));
          break;
        case RepoPathUse::Other:
          r.skipped.push_back(f.path);
          break;
        case RepoPathUse::Reserved:
          throw Error(t.repo + "@" + t.revision + " at " + hub.options().base_url + " lists '" + f.path +
                          "', a name deltafin keeps its own install state under; refusing to install from this listing",
                      "check --hub-url: a Hugging Face hub never lists such a file");
      }
    }
    files = std::move(used);
    if (files.empty()) throw Error(t.repo + "@" + t.revision + " lists no files", "check the repository and revision");
    std::set<std::string> shard_names;
    if (r.stream) {
      const HubFile* idx_file = find_file(files, kIndexName);
      const HubFile* cfg_file = find_file(files, kConfigName);
      if (!idx_file || !cfg_file)
        throw Error(t.repo + "@" + t.revision + " has no " + (idx_file ? kConfigName : kIndexName),
                    "a stream install needs a sharded safetensors checkpoint; use --full");
      std::string idx_text, cfg_text;
      with_retries(opt.tuning, nullptr, [&] { idx_text = hub.fetch_small(t.repo, t.revision, *idx_file); });
      with_retries(opt.tuning, nullptr, [&] { cfg_text = hub.fetch_small(t.repo, t.revision, *cfg_file); });
      CheckpointIndex idx = CheckpointIndex::parse(idx_text, t.repo + "/" + kIndexName);
      std::vector<std::string> names;
      names.reserve(idx.tensor_shard.size());
      for (const auto& kv : idx.tensor_shard) names.push_back(kv.first);
      const StreamShape shape = stream_shape(cfg_text, names, t.repo + "/" + kConfigName);
      r.layers = shape.layers;
      r.experts = shape.experts;
      shard_names.insert(idx.shards.begin(), idx.shards.end());
      for (const auto& s : idx.shards)
        if (!find_file(files, s))
          throw Error(t.repo + "@" + t.revision + " does not list shard " + s,
                      "the repository is incomplete on this hub");
      r.expert_bytes = shape.expert_bytes();
    }
    const InstalledRepo* rec = manifest.find_folder(r.folder);
    if (rec && (rec->repo != r.repo || rec->revision != r.revision)) rec = nullptr;
    std::unique_ptr<StreamPresence> presence;
    if (r.stream && fs::exists(StreamMarker::presence_path(opt.model_root))) {
      try {
        presence = std::make_unique<StreamPresence>(StreamPresence::load(StreamMarker::presence_path(opt.model_root)));
        if (presence->shards() != static_cast<int>(shard_names.size())) presence.reset();
      } catch (const Error&) {
        presence.reset();
      }
    }
    uint64_t shard_total = 0;
    int shard_i = 0, shards_pending = 0;
    for (const auto& f : files) {
      PlannedFile pf{f, shard_names.count(f.path) > 0};
      r.listed_bytes += f.size;
      const std::string dest = repo_dir(opt.model_root, r) + "/" + f.path;
      if (pf.stream_shard) {
        shard_total += f.size;
        ++r.shards;
        if (!presence || !presence->spine_done(shard_i)) ++shards_pending;
        ++shard_i;
      } else {
        r.install_bytes += f.size;
        const InstalledFile* inst = rec ? rec->find(f.path) : nullptr;
        std::error_code ec;
        bool have = inst && inst->state == "verified" && inst->hash == f.expected_hash() &&
                    fs::file_size(dest, ec) == f.size && !ec;
        if (!have) r.missing_bytes += f.size - std::min(f.size, partial_bytes(dest, f));
        if (f.path.size() > 12 && f.path.substr(f.path.size() - 12) == ".safetensors") ++r.shards;
      }
      r.files.push_back(std::move(pf));
    }
    if (r.stream) {
      if (r.expert_bytes > shard_total)
        throw Error(t.repo + ": config.json describes more expert bytes than the shards hold",
                    "the checkpoint does not match its config");
      const uint64_t spine = shard_total - r.expert_bytes;
      r.install_bytes += spine;
      if (r.shards) r.missing_bytes += spine / uint64_t(r.shards) * uint64_t(shards_pending);
    }
    plan.install_bytes += r.install_bytes;
    plan.missing_bytes += r.missing_bytes;
    plan.repos.push_back(std::move(r));
  }
  plan.free_bytes = free_disk_bytes(opt.model_root);
  if (opt.mode == SetupOptions::Mode::Stream && opt.k3) {
    const uint64_t after = plan.free_bytes > plan.missing_bytes + opt.space_margin
                               ? plan.free_bytes - plan.missing_bytes - opt.space_margin
                               : 0;
    plan.cache_cap = opt.cache_cap ? opt.cache_cap : default_stream_cap(after);
  }
  return plan;
}

std::string SetupPlan::describe() const {
  std::string s = "Model folder: " + model_root + " (" + format_bytes(free_bytes) + " free)\n";
  for (const auto& r : repos) {
    s += "  " + std::string(role_name(r.role)) + ": " + r.repo + "@" + short_rev(r.revision) + " -> " +
         (r.role == RepoRole::K3 ? std::string("./") : "addons/" + r.folder + "/") + ", " +
         (r.stream ? "stream" : "full") + ", " + std::to_string(r.files.size()) + " files";
    if (r.shards) s += " (" + std::to_string(r.shards) + " shards)";
    s += ", listed " + format_bytes_exact(r.listed_bytes) + "\n";
    if (r.stream)
      s += "      on disk now: about " + format_bytes(r.install_bytes) +
           " (metadata + non-expert tensors); routed experts (" + format_bytes(r.expert_bytes) +
           ") are fetched on demand\n";
    s += "      still to download: " + format_bytes_exact(r.missing_bytes) + "\n";
    if (!r.skipped.empty()) {
      s += "      not installed (not part of the model format):";
      for (size_t i = 0; i < r.skipped.size() && i < 10; ++i) s += " " + r.skipped[i];
      if (r.skipped.size() > 10) s += " and " + std::to_string(r.skipped.size() - 10) + " more";
      s += "\n";
    }
  }
  s += "Total on disk: " + format_bytes_exact(install_bytes) + "; to download: " + format_bytes_exact(missing_bytes) +
       "\n";
  if (cache_cap) s += "Stream cache cap: " + format_bytes_exact(cache_cap) + "\n";
  return s;
}

SetupPlan run_setup(const SetupOptions& opt, InstallObserver& obs, const std::atomic<bool>* cancel) {
  const std::string& root = opt.model_root;
  HubClient hub(opt.hub);
  if (opt.dry_run) {
    SetupPlan plan = plan_setup(opt, hub);
    std::string fit = plan.missing_bytes + opt.space_margin <= plan.free_bytes
                          ? "Enough disk space.\n"
                          : "NOT enough disk space: need " + format_bytes_exact(plan.missing_bytes) + " plus a " +
                                format_bytes(opt.space_margin) + " margin, " + format_bytes_exact(plan.free_bytes) +
                                " free.\n";
    obs.on_message(plan.describe() + fit + "Dry run: nothing was downloaded.");
    obs.on_finished(true);
    return plan;
  }
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error("cannot create the model folder " + root + ": " + ec.message(), "choose another --model-root");
  InstallLock lock(root);
  SetupPlan plan;
  try {
    plan = plan_setup(opt, hub);
  } catch (const Error& e) {
    obs.on_error(e.what_failed(), e.what_to_do());
    obs.on_finished(false);
    throw;
  }
  obs.on_message(plan.describe());
  try {
    check_disk_space(root, plan.missing_bytes, opt.space_margin);
    if (plan.cache_cap && plan.cache_cap + plan.missing_bytes + opt.space_margin > plan.free_bytes)
      throw Error("the stream cache cap " + format_bytes_exact(plan.cache_cap) +
                      " does not fit next to the install: " + format_bytes_exact(plan.free_bytes) + " free, " +
                      format_bytes_exact(plan.missing_bytes) + " still to download",
                  "pass a smaller --cache-size");
  } catch (const Error& e) {
    obs.on_error(e.what_failed(), e.what_to_do());
    obs.on_finished(false);
    throw;
  }

  int nfiles = 0;
  for (const auto& r : plan.repos) nfiles += static_cast<int>(r.files.size());
  ProgressMeter meter(obs, plan.install_bytes, nfiles);
  try {
    InstallManifest manifest = InstallManifest::load(root);
    manifest.hub_url = opt.hub.base_url;
    for (const auto& r : plan.repos) {
      InstalledRepo* ir = manifest.find_folder(r.folder);
      if (!ir) {
        manifest.repos.push_back({});
        ir = &manifest.repos.back();
        ir->folder = r.folder;
      }
      if (ir->repo != r.repo || ir->revision != r.revision || ir->mode != (r.stream ? "stream" : "full"))
        ir->files.clear();
      ir->role = r.role;
      ir->repo = r.repo;
      ir->revision = r.revision;
      ir->mode = r.stream ? "stream" : "full";
      ir->complete = false;
      manifest.save(root);
      const std::string dir = repo_dir(root, r);
      fs::create_directories(dir);
      if (r.role == RepoRole::K3 && !r.stream) {
        // Turning a stream install into a full one: its sparse shards are re-checked below and replaced.
        fs::remove(StreamMarker::path(root), ec);
        fs::remove(StreamMarker::presence_path(root), ec);
      }

      auto record = [&](const HubFile& f, const std::string& state) {
        InstalledRepo* cur = manifest.find_folder(r.folder);
        cur->files.erase(std::remove_if(cur->files.begin(), cur->files.end(),
                                        [&](const InstalledFile& x) { return x.path == f.path; }),
                         cur->files.end());
        cur->files.push_back({f.path, f.size, f.expected_hash(), f.hash_kind() == HashKind::Sha256, state});
        manifest.save(root);
      };

      // Stream: the presence index spans every layer x expert; its shape comes from the config.
      std::unique_ptr<SharedStreamPresence> presence;
      std::vector<std::string> shard_order;
      if (r.stream) {
        for (const auto& pf : r.files)
          if (pf.stream_shard) shard_order.push_back(pf.file.path);
        std::sort(shard_order.begin(), shard_order.end());
        const std::string pp = StreamMarker::presence_path(root);
        std::unique_ptr<StreamPresence> old;
        try {
          if (fs::exists(pp)) old = std::make_unique<StreamPresence>(StreamPresence::load(pp));
        } catch (const Error&) {
          old.reset();
        }
        if (!old || old->layers() != r.layers || old->experts() != r.experts ||
            old->shards() != static_cast<int>(shard_order.size()))
          StreamPresence(r.layers, r.experts, static_cast<int>(shard_order.size())).save(pp);
        // From here on the table is changed in place, under its lock: engines may be using it.
        presence = std::make_unique<SharedStreamPresence>(root);
        // The marker goes first: a half-finished stream install must never look like a full one
        // (its holes would be read as weights); the stream source refuses it until the spine is complete.
        StreamMarker m;
        m.hub_url = opt.hub.base_url;
        m.repo = r.repo;
        m.revision = r.revision;
        m.cap_bytes = plan.cache_cap;
        for (const auto& name : shard_order)
          for (const auto& x : r.files)
            if (x.file.path == name) m.shards.push_back({name, x.file.size, x.file.sha256});
        m.save(root);
      }

      for (const auto& pf : r.files) {
        const HubFile& f = pf.file;
        const std::string dest = dir + "/" + f.path;
        const std::string what = r.repo + "/" + f.path;
        meter.set_current(what);
        fs::create_directories(fs::path(dest).parent_path());
        if (pf.stream_shard) {
          const int si =
              static_cast<int>(std::find(shard_order.begin(), shard_order.end(), f.path) - shard_order.begin());
          bool spine_present = false;
          {
            SharedStreamPresence::Guard g(*presence);
            spine_present = presence->spine_done(si);
          }
          if (spine_present && fs::exists(dest) && fs::file_size(dest) == f.size) {
            meter.bytes() += shard_spine(SafetensorsHeader::read(dest)).bytes;
            meter.file_done();
            meter.file(r.repo, f.path, FileState::Skipped, "non-expert tensors already present");
            continue;
          }
          meter.file(r.repo, f.path, FileState::Downloading, "non-expert tensors");
          std::string head = fetch_header_bytes(hub, r, f, opt.tuning, cancel);
          SafetensorsHeader h =
              SafetensorsHeader::parse(reinterpret_cast<const uint8_t*>(head.data()), head.size(), f.size, what);
          ShardSpine spine = shard_spine(h);
          int fd = ::open(dest.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
          if (fd < 0) throw Error("cannot create " + dest + ": " + std::strerror(errno), "check permissions");
          struct FdCloser {
            int fd;
            ~FdCloser() { ::close(fd); }
          } closer{fd};
          if (::ftruncate(fd, static_cast<off_t>(f.size)) != 0)
            throw Error("cannot size " + dest + ": " + std::strerror(errno), "check free space");
          for (const auto& [b, e] : spine.ranges) {
            std::atomic<uint64_t> done{0};
            fetch_range_to_fd(hub, r.repo, r.revision, f.path, b, e - b, fd, done, &meter.bytes(), opt.tuning, cancel,
                              [&](const std::string& why) { meter.file(r.repo, f.path, FileState::Retrying, why); });
          }
          if (::fdatasync(fd) != 0) throw Error("cannot flush " + dest + ": " + std::strerror(errno), "check the disk");
          // The header fetched separately must be the one now on disk.
          SafetensorsHeader check = SafetensorsHeader::read(dest);
          if (check.data_start != h.data_start || check.tensors.size() != h.tensors.size())
            throw Error(what + " changed while it was being fetched", "run deltafin setup --stream again");
          // A shard without experts is whole now: check it like a full download.
          if (!spine.has_experts) {
            meter.file(r.repo, f.path, FileState::Verifying, "");
            const std::string got = hash_file(dest, f.hash_kind());
            if (got != f.expected_hash()) {
              fs::remove(dest);
              throw Error(
                  what + " does not match the hub listing: expected SHA-256 " + f.expected_hash() + ", got " + got,
                  "run deltafin setup --stream again; the file is fetched anew");
            }
          }
          {
            SharedStreamPresence::Guard g(*presence);
            presence->set_shard_state(si, spine.has_experts ? 1 : 2);
            presence->flush();
          }
          record(f, spine.has_experts ? "sparse" : "verified");
          meter.file_done();
          meter.file(r.repo, f.path, FileState::Verified,
                     spine.has_experts ? "non-expert tensors in place; experts on demand" : "complete and verified");
          continue;
        }

        const InstalledRepo* cur = manifest.find_folder(r.folder);
        const InstalledFile* inst = cur->find(f.path);
        std::error_code fec;
        if (fs::exists(dest, fec)) {
          bool same_size = fs::file_size(dest, fec) == f.size && !fec;
          bool trusted = same_size && inst && inst->state == "verified" && inst->hash == f.expected_hash();
          if (!trusted && same_size) {
            meter.file(r.repo, f.path, FileState::Verifying, "found on disk; checking it");
            trusted = hash_file(dest, f.hash_kind()) == f.expected_hash();
          }
          if (trusted) {
            if (!inst || inst->state != "verified" || inst->hash != f.expected_hash()) record(f, "verified");
            meter.bytes() += f.size;
            meter.file_done();
            meter.file(r.repo, f.path, FileState::Skipped, "already installed and verified");
            continue;
          }
          fs::remove(dest, fec);
        }
        download_file(
            hub, r.repo, r.revision, f, dest, opt.tuning, meter.bytes(),
            [&](FileState s, const std::string& d) { meter.file(r.repo, f.path, s, d); }, cancel);
        record(f, "verified");
        meter.file_done();
      }

      manifest.find_folder(r.folder)->complete = true;
      manifest.save(root);
    }
    meter.message("Installed and verified in " + root);
    meter.finish(true);
  } catch (const Error& e) {
    meter.error(e.what_failed(), e.what_to_do());
    meter.finish(false);
    throw;
  } catch (const std::exception& e) {
    meter.error(e.what(), "");
    meter.finish(false);
    throw;
  }
  return plan;
}

}  // namespace deltafin
