#include "install/doctor.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "deltafin/build_info.h"
#include "install/disk_space.h"
#include "install/file_hash.h"
#include "install/install_manifest.h"
#include "model/model_root.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "stream/stream_layout.h"
#include "stream/stream_marker.h"
#include "stream/stream_presence.h"

namespace fs = std::filesystem;

namespace deltafin {

namespace {

using Level = DoctorFinding::Level;

void audit_repo(const std::string& root, const InstalledRepo& r, bool verify,
                const std::function<void(const std::string&)>& progress, std::vector<DoctorFinding>& out) {
  const std::string subject = role_name(r.role) + std::string(" ") + r.repo;
  const std::string dir = install_dir(root, r.role == RepoRole::K3, r.folder);
  const std::string resume = std::string("run deltafin ") +
                             (r.role == RepoRole::Qwen ? "setup-qwen" : "setup --" + r.mode) +
                             " again; it resumes and re-checks";
  if (!r.complete) out.push_back({Level::Problem, subject, "the install did not finish", resume});
  int bad = 0, verified = 0, sparse = 0, partials = 0;
  uint64_t bytes = 0;
  for (const auto& f : r.files) {
    const std::string p = dir + "/" + f.path;
    std::error_code ec;
    if (fs::exists(p + ".partial", ec)) ++partials;
    if (!fs::exists(p, ec)) {
      out.push_back({Level::Problem, subject, f.path + " is missing", resume});
      ++bad;
      continue;
    }
    if (fs::file_size(p, ec) != f.size) {
      out.push_back(
          {Level::Problem, subject,
           f.path + " has " + std::to_string(fs::file_size(p, ec)) + " bytes, the Hub lists " + std::to_string(f.size),
           "delete it and " + resume});
      ++bad;
      continue;
    }
    bytes += f.size;
    if (f.state == "sparse") {
      ++sparse;
      continue;
    }
    if (verify) {
      if (progress) progress("hashing " + r.repo + "/" + f.path);
      const std::string got = hash_file(p, f.sha256 ? HashKind::Sha256 : HashKind::GitBlobSha1);
      if (got != f.hash) {
        out.push_back({Level::Problem, subject,
                       f.path + " does not match the Hub's hash (expected " + f.hash + ", got " + got + ")",
                       "delete it and " + resume});
        ++bad;
        continue;
      }
    }
    ++verified;
  }
  if (bad == 0 && r.complete) {
    std::string d =
        r.mode + " install at " + r.revision.substr(0, 12) + ", " + std::to_string(r.files.size()) + " files, " +
        format_bytes(bytes) +
        (verify ? ", every file re-hashed just now" : ", each verified against the Hub's hash when downloaded");
    if (sparse) d += "; " + std::to_string(sparse) + " shards hold non-expert tensors, experts come on demand";
    out.push_back({Level::Ok, subject, d, ""});
  }
  if (partials)
    out.push_back(
        {Level::Note, subject, std::to_string(partials) + " interrupted download(s) waiting to resume", resume});
}

void audit_stream(const std::string& root, std::vector<DoctorFinding>& out) {
  auto marker = StreamMarker::find(root);
  if (!marker) return;
  const std::string pp = StreamMarker::presence_path(root);
  try {
    StreamPresence p = StreamPresence::load(pp);
    if (!p.all_spine_done())
      out.push_back({Level::Problem, "stream cache", "some shards still lack their non-expert tensors",
                     "run deltafin setup --stream again"});
    std::string d = std::to_string(p.present_count()) + " of " +
                    std::to_string(size_t(p.layers()) * size_t(p.experts())) + " expert slots cached, cap " +
                    format_bytes(marker->cap_bytes) + ", fetched from " + marker->hub_url + " (" + marker->repo +
                    "); offline runs work for cached experts only";
    out.push_back({Level::Ok, "stream cache", d, ""});
    // Bytes are checked against the Hub's SHA-256 a whole shard at a time, when its last byte arrives.
    auto ck = Checkpoint::open(root);
    const auto loc = expert_locations(*ck, p.layers(), p.experts());
    std::vector<uint64_t> present(static_cast<size_t>(p.shards()), 0);
    for (int s = 0; s < p.shards() && s < static_cast<int>(ck->shard_names().size()); ++s)
      if (p.spine_done(s))
        present[static_cast<size_t>(s)] = shard_spine(ck->shard_header(static_cast<uint32_t>(s))).bytes;
    for (size_t l = 0; l < loc.size(); ++l)
      for (size_t e = 0; e < loc[l].size(); ++e)
        if (p.present(static_cast<int>(l), static_cast<int>(e)) && loc[l][e].shard < present.size())
          present[loc[l][e].shard] += loc[l][e].bytes;
    std::string names;
    int unverified = 0, verified = 0;
    uint64_t unverified_bytes = 0;
    for (int s = 0; s < p.shards(); ++s) {
      if (p.shard_state(s) == 2) {
        ++verified;
        continue;
      }
      ++unverified;
      unverified_bytes += present[static_cast<size_t>(s)];
      if (unverified <= 8) names += (names.empty() ? "" : ", ") + marker->shards.at(static_cast<size_t>(s)).name;
    }
    if (unverified > 8) names += " and " + std::to_string(unverified - 8) + " more";
    if (unverified)
      out.push_back({Level::Note, "stream cache",
                     std::to_string(unverified) + " of " + std::to_string(p.shards()) + " shards unverified: " +
                         format_bytes_exact(unverified_bytes) + " on disk not yet checked against the Hub's SHA-256 (" +
                         names + "); a shard is checked when its last byte arrives",
                     "deltafin cache verify --fetch completes and checks them (downloads the rest of each shard); "
                     "--shard NAME checks one"});
    else
      out.push_back({Level::Ok, "stream cache",
                     "all " + std::to_string(verified) + " shards complete and verified against the Hub's SHA-256",
                     ""});
  } catch (const Error& e) {
    out.push_back({Level::Problem, "stream cache", e.what_failed(), e.what_to_do()});
  }
}

void audit_backends(std::vector<DoctorFinding>& out) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2"),
             avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  if (avx512) out.push_back({Level::Ok, "backend", "CPU: AVX-512 kernels", ""});
  else if (avx2) out.push_back({Level::Ok, "backend", "CPU: AVX2 kernels (no AVX-512 on this CPU)", ""});
  else out.push_back({Level::Note, "backend", "CPU: portable kernels only (no AVX2); expect slow runs", ""});
  if (build_info::cuda) {
    if (fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0"))
      out.push_back({Level::Ok, "backend", "CUDA: built in, NVIDIA device nodes present", ""});
    else
      out.push_back({Level::Note, "backend", "CUDA: built in, but no NVIDIA device is visible",
                     "install the NVIDIA driver, or ignore this on a CPU-only machine"});
  } else {
    out.push_back({Level::Note, "backend", "CUDA: not built in (CPU-only build)",
                   fs::exists("/dev/nvidiactl") ? "this machine has an NVIDIA GPU: rebuild with the cuda preset "
                                                  "(installers/bootstrap.sh picks it when nvcc is present)"
                                                : ""});
  }
}

// Transparent huge pages: the expert cache and a streamed spine's buffers ask for them
// (MADV_HUGEPAGE), and an expert read through 4 KB pages is a TLB miss per page: half the decode
// speed on the virtual machines measured (docs/STREAMING.md, "Huge pages").
void audit_memory(std::vector<DoctorFinding>& out) {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  if (!f || !std::getline(f, text)) return;  // no transparent huge pages on this system
  const size_t a = text.find('['), b = text.find(']');
  if (a == std::string::npos || b == std::string::npos || b < a) return;
  const std::string mode = text.substr(a + 1, b - a - 1);
  if (mode == "never")
    out.push_back({Level::Note, "memory",
                   "transparent huge pages are off (never): the expert cache and streamed spine use 4 KB pages",
                   "as root: echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"});
  else
    out.push_back({Level::Ok, "memory",
                   "transparent huge pages (" + mode + "): used for the expert cache and the streamed spine", ""});
}

}  // namespace

bool DoctorReport::healthy() const {
  for (const auto& f : findings)
    if (f.level == Level::Problem) return false;
  return true;
}

std::string DoctorReport::text() const {
  std::string s = "Model root: " + model_root + "\n";
  for (const auto& f : findings) {
    const char* tag = f.level == Level::Ok ? "ok     " : f.level == Level::Note ? "note   " : "PROBLEM";
    s += std::string("  ") + tag + "  " + f.subject + ": " + f.detail + "\n";
    if (!f.fix.empty()) s += "           -> " + f.fix + "\n";
  }
  s += healthy() ? "No problems found.\n" : "Problems found; see the suggestions above.\n";
  return s;
}

std::string DoctorReport::json() const {
  nlohmann::json j;
  j["model_root"] = model_root;
  j["healthy"] = healthy();
  j["findings"] = nlohmann::json::array();
  for (const auto& f : findings)
    j["findings"].push_back({{"level", f.level == Level::Ok     ? "ok"
                                       : f.level == Level::Note ? "note"
                                                                : "problem"},
                             {"subject", f.subject},
                             {"detail", f.detail},
                             {"fix", f.fix}});
  return j.dump(2);
}

DoctorReport run_doctor(const std::string& root, bool verify, const std::function<void(const std::string&)>& progress) {
  DoctorReport rep;
  rep.model_root = root;
  auto& out = rep.findings;
  if (!fs::exists(root)) {
    out.push_back({Level::Problem, "k3", "nothing is installed at " + root,
                   "deltafin setup --full (1.56 TB) or deltafin setup --stream"});
  } else {
    InstallManifest m;
    try {
      m = InstallManifest::load(root);
    } catch (const Error& e) {
      out.push_back({Level::Problem, "install record", e.what_failed(), e.what_to_do()});
    }
    if (m.repos.empty()) {
      if (fs::exists(root + "/config.json"))
        out.push_back({Level::Note, "k3",
                       "a model folder not installed by deltafin setup: its files cannot be checked against the Hub",
                       "run deltafin setup --full --model-root " + root +
                           " to adopt it (existing files are hashed, not re-downloaded)"});
      else
        out.push_back({Level::Problem, "k3", "nothing is installed at " + root,
                       "deltafin setup --full (1.56 TB) or deltafin setup --stream"});
    }
    for (const auto& r : m.repos) audit_repo(root, r, verify, progress, out);
    if (!m.repos.empty() && !m.find_role(RepoRole::DSpark))
      out.push_back({Level::Note, "dspark", "the DSpark drafter is not installed: no speculative decoding",
                     "run deltafin setup again without --without-dspark"});
    audit_stream(root, out);
    // The checkpoint must open and its config must validate: that is what `run` does first.
    if (fs::exists(root + "/config.json")) {
      try {
        K3Config cfg = K3Config::load(root + "/config.json");
        auto ck = Checkpoint::open(root);
        out.push_back({Level::Ok, "k3",
                       std::string(claims_k3_release(cfg) ? "the released Kimi K3" : "a K3-family checkpoint") + ": " +
                           std::to_string(cfg.layers) + " layers, " + std::to_string(cfg.experts) +
                           " experts per layer, " + std::to_string(ck->tensor_count()) + " tensors in " +
                           std::to_string(ck->shard_names().size()) + " shards",
                       ""});
      } catch (const Error& e) {
        out.push_back({Level::Problem, "k3", e.what_failed(),
                       e.what_to_do().empty() ? "run deltafin setup again" : e.what_to_do()});
      }
    }
    out.push_back({Level::Ok, "disk", format_bytes(free_disk_bytes(root)) + " free on the model root's disk", ""});
  }
  audit_backends(out);
  audit_memory(out);
  return rep;
}

}  // namespace deltafin
