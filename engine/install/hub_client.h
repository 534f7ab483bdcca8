#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "install/file_hash.h"

namespace deltafin {

inline constexpr const char* kDefaultHubUrl = "https://huggingface.co";

// One file of a Hub repository, as the tree listing describes it.
struct HubFile {
  std::string path;
  uint64_t size = 0;
  std::string sha256;   // LFS oid; empty for files stored in git itself
  std::string git_oid;  // git blob id
  HashKind hash_kind() const { return sha256.empty() ? HashKind::GitBlobSha1 : HashKind::Sha256; }
  const std::string& expected_hash() const { return sha256.empty() ? git_oid : sha256; }
};

struct HubOptions {
  std::string base_url = kDefaultHubUrl;
  std::string token;  // for gated repos; sent only to the base URL's host, never logged
  long connect_timeout_s = 30;
  long stall_timeout_s = 60;  // a transfer that delivers nothing for this long is stalled
  int max_redirects = 8;
};

// A network or HTTP failure. Transient ones (drops, 5xx, stalls) are worth retrying.
class HubError : public Error {
 public:
  HubError(const std::string& what, const std::string& todo, bool transient, long status)
      : Error(what, todo), transient_(transient), status_(status) {}
  bool transient() const { return transient_; }
  long http_status() const { return status_; }

 private:
  bool transient_;
  long status_;
};

// Receives body bytes in order; returning false cancels the transfer.
using ByteSink = std::function<bool(const uint8_t* data, size_t n)>;

// Talks to a Hugging Face Hub compatible server with libcurl.
class HubClient {
 public:
  explicit HubClient(HubOptions options);
  const HubOptions& options() const { return opt_; }

  // Every file of repo at revision ({base}/api/models/{repo}/tree/{rev}?recursive=true, following pagination).
  std::vector<HubFile> list_files(const std::string& repo, const std::string& revision) const;
  // Bytes [offset, offset+length) of a file, delivered to sink as they arrive. Returns only when all
  // of them arrived; otherwise throws HubError (the sink may have received a prefix).
  void fetch_range(const std::string& repo, const std::string& revision, const std::string& path, uint64_t offset,
                   uint64_t length, const ByteSink& sink, const std::atomic<bool>* cancel = nullptr) const;
  // A whole small file (metadata) in memory.
  std::string fetch_small(const std::string& repo, const std::string& revision, const HubFile& file) const;

  std::string file_url(const std::string& repo, const std::string& revision, const std::string& path) const;

 private:
  HubOptions opt_;
};

// --hub-url when given, else $DELTAFIN_HUB_URL, else the public Hub.
std::string resolve_hub_url(const std::string& flag_value);
// Whether the hub's token may go with a request for `url`: only to the hub's own origin, the
// same scheme, host and port (a default port written out or not), never to another port of the
// same host nor to a host the hub redirects to.
bool token_goes_to(const std::string& hub_url, const std::string& url);
// Rejects listing paths that could escape the model folder.
bool is_safe_repo_path(const std::string& path);

// What a listed path may become in the model folder. Model: a name the model format uses
// (weights, configs, tokenizer, docs: an allow-list by pattern), installed. Reserved: a name
// of the installer's own (.deltafin/..., installed.json, addons/..., *.partial, hidden files of
// ours): a listing naming one is refused. Other: anything else, never written.
enum class RepoPathUse { Model, Reserved, Other };
RepoPathUse repo_path_use(const std::string& path);

}  // namespace deltafin
