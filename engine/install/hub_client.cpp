#include "install/hub_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>
#include <memory>
#include <mutex>
#include <string_view>
#include <nlohmann/json.hpp>

namespace deltafin {

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct UrlParts {
  std::string scheme, host, port;  // port: the effective one (443 when an https URL names none)
  bool same_origin(const UrlParts& o) const { return scheme == o.scheme && host == o.host && port == o.port; }
};

UrlParts parse_url(const std::string& url) {
  UrlParts p;
  CURLU* u = curl_url();
  if (!u) return p;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* s = nullptr;
    if (curl_url_get(u, CURLUPART_SCHEME, &s, 0) == CURLUE_OK) p.scheme = s;
    curl_free(s);
    s = nullptr;
    if (curl_url_get(u, CURLUPART_HOST, &s, 0) == CURLUE_OK) p.host = s;
    curl_free(s);
    s = nullptr;
    if (curl_url_get(u, CURLUPART_PORT, &s, CURLU_DEFAULT_PORT) == CURLUE_OK) p.port = s;
    curl_free(s);
  }
  curl_url_cleanup(u);
  for (auto& c : p.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto& c : p.host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return p;
}

// Addresses a redirect must not lead to: this machine, private networks, link-local, and the
// like (a hub redirecting there would make deltafin fetch from the user's own network).
bool is_internal_address(const char* ip) {
  unsigned char a[16];
  if (::inet_pton(AF_INET, ip, a) == 1) {
    return a[0] == 0 || a[0] == 10 || a[0] == 127 || (a[0] == 169 && a[1] == 254) ||
           (a[0] == 172 && (a[1] & 0xF0) == 16) || (a[0] == 192 && a[1] == 168) ||
           (a[0] == 100 && (a[1] & 0xC0) == 64) || a[0] >= 224;
  }
  if (::inet_pton(AF_INET6, ip, a) == 1) {
    static const unsigned char zero[16] = {};
    const bool v4_mapped = std::memcmp(a, zero, 10) == 0 && a[10] == 0xFF && a[11] == 0xFF;
    if (v4_mapped) {
      char v4[INET_ADDRSTRLEN];
      ::inet_ntop(AF_INET, a + 12, v4, sizeof v4);
      return is_internal_address(v4);
    }
    const bool unspecified_or_loopback = std::memcmp(a, zero, 15) == 0 && (a[15] == 0 || a[15] == 1);
    return unspecified_or_loopback || (a[0] & 0xFE) == 0xFC || (a[0] == 0xFE && (a[1] & 0xC0) == 0x80) || a[0] == 0xFF;
  }
  return true;  // not an address we can judge: refuse
}

bool is_loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "[::1]"; }

// Plain http is accepted only for a hub on this machine (tests, local mirrors).
bool scheme_allowed(const UrlParts& p) { return p.scheme == "https" || (p.scheme == "http" && is_loopback(p.host)); }

// Signed CDN URLs carry credentials in the query: never print it.
std::string printable(const std::string& url) { return url.substr(0, url.find('?')); }

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

struct Transfer {
  long status = 0;
  std::string content_range, link;
  std::function<bool(const char*, size_t)> on_body;  // only 2xx bodies reach it
  std::string error_body;
  std::string abort_reason;
  bool abort_transient = true;
  const std::atomic<bool>* cancel = nullptr;
  // An exception thrown by a callback: caught before it can unwind through libcurl's C frames,
  // rethrown once curl_easy_perform() has returned.
  std::exception_ptr callback_error;
  bool foreign_origin = false;  // this hop is not the hub itself: internal addresses are refused
};

size_t on_header(char* buf, size_t size, size_t n, void* ud) noexcept {
  auto* t = static_cast<Transfer*>(ud);
  try {
    std::string line(buf, size * n);
    if (line.rfind("HTTP/", 0) == 0) {
      t->status = 0;
      auto sp = line.find(' ');
      if (sp != std::string::npos) t->status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
      t->content_range.clear();
      t->link.clear();
    } else if (auto colon = line.find(':'); colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = trim(line.substr(colon + 1));
      if (name == "content-range") t->content_range = value;
      else if (name == "link") t->link = value;
    }
  } catch (...) {
    t->callback_error = std::current_exception();
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  return size * n;
}

size_t on_write(char* buf, size_t size, size_t n, void* ud) noexcept {
  auto* t = static_cast<Transfer*>(ud);
  size_t bytes = size * n;
  try {
    if (t->status >= 200 && t->status < 300) {
      if (!t->on_body(buf, bytes)) return 0;  // makes curl fail with CURLE_WRITE_ERROR
    } else if (t->error_body.size() < 2048) {
      t->error_body.append(buf, std::min(bytes, size_t(2048)));
    }
  } catch (...) {
    t->callback_error = std::current_exception();
    return 0;
  }
  return bytes;
}

int on_progress(void* ud, curl_off_t, curl_off_t, curl_off_t, curl_off_t) noexcept {
  auto* t = static_cast<Transfer*>(ud);
  if (t->cancel && t->cancel->load()) {
    t->abort_reason = "cancelled";
    t->abort_transient = false;
    return 1;
  }
  return 0;
}

std::string strip_brackets(const std::string& host) {
  return host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
}

bool is_ip_literal(const std::string& host) {
  unsigned char a[16];
  const std::string h = strip_brackets(host);
  return ::inet_pton(AF_INET, h.c_str(), a) == 1 || ::inet_pton(AF_INET6, h.c_str(), a) == 1;
}

// Through a proxy the connected address is the proxy's: only literal addresses can be judged then.
bool through_proxy() {
  for (const char* v : {"https_proxy", "HTTPS_PROXY", "http_proxy", "all_proxy", "ALL_PROXY"})
    if (const char* p = std::getenv(v); p && *p) return true;
  return false;
}

// Runs once connected, before the request is sent: the address is the resolved one, so a
// name that resolves to an internal address is caught as well as a literal one.
int on_connected(void* ud, char* primary_ip, char*, int, int) noexcept {
  auto* t = static_cast<Transfer*>(ud);
  if (t->foreign_origin && is_internal_address(primary_ip)) {
    t->abort_reason = std::string("refusing a redirect to the internal address ") + primary_ip;
    t->abort_transient = false;
    return CURL_PREREQFUNC_ABORT;
  }
  return CURL_PREREQFUNC_OK;
}

struct CurlHandle {
  CURL* h = curl_easy_init();
  curl_slist* headers = nullptr;
  ~CurlHandle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
  }
};

bool status_transient(long s) { return s == 408 || s == 429 || s >= 500; }

std::string status_advice(long s) {
  if (s == 401 || s == 403) return "the repository may be gated: accept its terms on the Hub and set HF_TOKEN";
  if (s == 404) return "check the repository name and revision (--k3-repo, --dspark-repo, --qwen-repos, --revision)";
  if (status_transient(s)) return "the server is having trouble; try again later";
  return "check --hub-url";
}

// One GET, following redirects under our own policy. Body bytes of the final
// 2xx response go to t.on_body. Returns the final status; throws on network errors.
long perform(const HubOptions& opt, const std::string& start_url, const std::string& range, Transfer& t) {
  global_init();
  const UrlParts base = parse_url(opt.base_url);
  std::string url = start_url;
  for (int hop = 0;; ++hop) {
    const UrlParts here = parse_url(url);
    if (!scheme_allowed(here))
      throw HubError("refusing to fetch " + printable(url) + ": only https is allowed (http only for 127.0.0.1)",
                     "use an https hub URL", false, 0);
    CurlHandle c;
    if (!c.h) throw HubError("libcurl could not create a handle", "", true, 0);
    curl_easy_setopt(c.h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c.h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c.h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c.h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c.h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c.h, CURLOPT_CONNECTTIMEOUT, opt.connect_timeout_s);
    curl_easy_setopt(c.h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c.h, CURLOPT_LOW_SPEED_TIME, opt.stall_timeout_s);
    curl_easy_setopt(c.h, CURLOPT_USERAGENT, "deltafin/0.1");
    curl_easy_setopt(c.h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c.h, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c.h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c.h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c.h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c.h, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(c.h, CURLOPT_NOPROGRESS, 0L);
    t.foreign_origin = !here.same_origin(base) && !through_proxy();
    if (!here.same_origin(base) && is_ip_literal(here.host) && is_internal_address(strip_brackets(here.host).c_str()))
      throw HubError(
          "refusing to follow a redirect from " + printable(start_url) + " to the internal address " + here.host,
          "the hub redirects into this machine or its network; check --hub-url", false, 0);
    curl_easy_setopt(c.h, CURLOPT_PREREQFUNCTION, on_connected);
    curl_easy_setopt(c.h, CURLOPT_PREREQDATA, &t);
    if (!range.empty()) c.headers = curl_slist_append(c.headers, ("Range: bytes=" + range).c_str());
    // The token goes only to the hub itself (same scheme, host and port), never to a CDN it redirects to.
    if (!opt.token.empty() && token_goes_to(opt.base_url, url))
      c.headers = curl_slist_append(c.headers, ("Authorization: Bearer " + opt.token).c_str());
    if (c.headers) curl_easy_setopt(c.h, CURLOPT_HTTPHEADER, c.headers);
    t.status = 0;
    t.error_body.clear();
    CURLcode rc = curl_easy_perform(c.h);
    if (t.callback_error) std::rethrow_exception(std::exchange(t.callback_error, nullptr));
    if (rc != CURLE_OK) {
      if (!t.abort_reason.empty())
        throw HubError(t.abort_reason + " (" + printable(url) + ")", "", t.abort_transient, t.status);
      std::string why = curl_easy_strerror(rc);
      if (rc == CURLE_OPERATION_TIMEDOUT) why = "stalled: no data for " + std::to_string(opt.stall_timeout_s) + " s";
      throw HubError("network error on " + printable(url) + ": " + why,
                     "check the connection; deltafin resumes where it stopped", true, t.status);
    }
    long status = 0;
    curl_easy_getinfo(c.h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 && status < 400) {
      char* loc = nullptr;
      curl_easy_getinfo(c.h, CURLINFO_REDIRECT_URL, &loc);
      if (!loc) throw HubError("redirect without a Location from " + printable(url), "", true, status);
      if (hop + 1 >= opt.max_redirects)
        throw HubError("too many redirects from " + printable(start_url), "check --hub-url", false, status);
      url = loc;
      continue;
    }
    return status;
  }
}

std::string encode_path(const std::string& path) {
  global_init();
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    char* e = curl_easy_escape(nullptr, seg.c_str(), static_cast<int>(seg.size()));
    out += e ? e : seg;
    curl_free(e);
    if (slash == std::string::npos) break;
    out += '/';
    start = slash + 1;
  }
  return out;
}

// Link: <url>; rel="next"
std::string next_link(const std::string& link) {
  size_t pos = 0;
  while ((pos = link.find('<', pos)) != std::string::npos) {
    size_t end = link.find('>', pos);
    if (end == std::string::npos) break;
    size_t next = link.find('<', end);
    std::string params = link.substr(end, next == std::string::npos ? std::string::npos : next - end);
    if (params.find("rel=\"next\"") != std::string::npos) return link.substr(pos + 1, end - pos - 1);
    pos = end;
  }
  return {};
}

}  // namespace

std::string resolve_hub_url(const std::string& flag_value) {
  std::string url = flag_value;
  if (url.empty())
    if (const char* env = std::getenv("DELTAFIN_HUB_URL")) url = env;
  if (url.empty()) url = kDefaultHubUrl;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

bool is_safe_repo_path(const std::string& path) {
  if (path.empty() || path[0] == '/' || path.find('\\') != std::string::npos || path.find('\0') != std::string::npos)
    return false;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    std::string seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

RepoPathUse repo_path_use(const std::string& path) {
  if (!is_safe_repo_path(path)) return RepoPathUse::Reserved;
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const std::string first = path.substr(0, path.find('/'));
  if (first == ".deltafin" || first == "addons" || path == "installed.json" || ends(".partial") ||
      ends(".partial.json") || ends(".tmp"))
    return RepoPathUse::Reserved;
  // Each segment a plain name: letters, digits, '.', '_', '-', not starting with '.'; at most 3 deep.
  int depth = 0;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (seg.empty() || seg[0] == '.' || seg.size() > 200) return RepoPathUse::Other;
    for (char c : seg)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return RepoPathUse::Other;
    if (++depth > 3) return RepoPathUse::Other;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  const std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  for (const char* ext : {".safetensors", ".json", ".model", ".tiktoken", ".jinja", ".txt", ".md"})
    if (ends(ext)) return RepoPathUse::Model;
  for (const char* doc : {"LICENSE", "NOTICE", "README"})
    if (name.rfind(doc, 0) == 0) return RepoPathUse::Model;
  return RepoPathUse::Other;
}

bool token_goes_to(const std::string& hub_url, const std::string& url) {
  const UrlParts hub = parse_url(hub_url), there = parse_url(url);
  return !hub.scheme.empty() && !hub.host.empty() && !hub.port.empty() && hub.same_origin(there);
}

HubClient::HubClient(HubOptions options) : opt_(std::move(options)) {
  while (!opt_.base_url.empty() && opt_.base_url.back() == '/') opt_.base_url.pop_back();
  if (!scheme_allowed(parse_url(opt_.base_url)))
    throw Error("hub URL " + opt_.base_url + " is not https (plain http is allowed only for 127.0.0.1)",
                "pass an https URL to --hub-url or DELTAFIN_HUB_URL");
}

std::string HubClient::file_url(const std::string& repo, const std::string& revision, const std::string& path) const {
  return opt_.base_url + "/" + repo + "/resolve/" + encode_path(revision) + "/" + encode_path(path);
}

std::vector<HubFile> HubClient::list_files(const std::string& repo, const std::string& revision) const {
  std::vector<HubFile> files;
  std::string url = opt_.base_url + "/api/models/" + repo + "/tree/" + encode_path(revision) + "?recursive=true";
  const std::string origin = "the file listing of " + repo + "@" + revision;
  for (int page = 0; !url.empty(); ++page) {
    if (page > 10000) throw HubError(origin + " does not end (pagination loops)", "check --hub-url", false, 0);
    std::string body;
    Transfer t;
    t.on_body = [&](const char* d, size_t n) {
      if (body.size() + n > (256u << 20)) {
        t.abort_reason = origin + " is larger than 256 MiB";
        t.abort_transient = false;
        return false;
      }
      body.append(d, n);
      return true;
    };
    long status = perform(opt_, url, "", t);
    if (status != 200)
      throw HubError(
          "cannot list " + repo + "@" + revision + " at " + opt_.base_url + ": HTTP " + std::to_string(status),
          status_advice(status), status_transient(status), status);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(body);
    } catch (const nlohmann::json::exception& e) {
      throw HubError(origin + " is not valid JSON: " + e.what(), "check --hub-url", true, status);
    }
    if (!j.is_array()) throw HubError(origin + " is not a JSON array", "check --hub-url", false, status);
    for (const auto& e : j) {
      if (!e.is_object() || e.value("type", "") != "file") continue;
      HubFile f;
      f.path = e.value("path", "");
      if (!is_safe_repo_path(f.path))
        throw HubError(origin + " names an unsafe path '" + f.path + "'", "check --hub-url", false, 0);
      if (!e.contains("size") || !e["size"].is_number_unsigned())
        throw HubError(origin + " gives no size for " + f.path, "check --hub-url", false, 0);
      f.size = e["size"].get<uint64_t>();
      f.git_oid = e.value("oid", "");
      if (auto lfs = e.find("lfs"); lfs != e.end() && lfs->is_object()) {
        f.sha256 = lfs->value("oid", "");
        if (f.sha256.rfind("sha256:", 0) == 0) f.sha256 = f.sha256.substr(7);
        if (lfs->contains("size") && (*lfs)["size"].is_number_unsigned()) f.size = (*lfs)["size"].get<uint64_t>();
      }
      if (f.expected_hash().empty())
        throw HubError(origin + " gives no hash for " + f.path, "check --hub-url", false, 0);
      files.push_back(std::move(f));
    }
    url = next_link(t.link);
  }
  std::sort(files.begin(), files.end(), [](const HubFile& a, const HubFile& b) { return a.path < b.path; });
  return files;
}

void HubClient::fetch_range(const std::string& repo, const std::string& revision, const std::string& path,
                            uint64_t offset, uint64_t length, const ByteSink& sink,
                            const std::atomic<bool>* cancel) const {
  if (length == 0) return;
  const std::string url = file_url(repo, revision, path);
  const std::string what = repo + "/" + path;
  uint64_t got = 0;
  bool checked = false;
  Transfer t;
  t.cancel = cancel;
  t.on_body = [&](const char* d, size_t n) {
    if (!checked) {
      checked = true;
      if (t.status == 206) {
        unsigned long long a = 0, b = 0;
        if (std::sscanf(t.content_range.c_str(), "bytes %llu-%llu", &a, &b) != 2 || a != offset ||
            b + 1 != offset + length) {
          t.abort_reason = "server answered " + what + " bytes " + std::to_string(offset) + "+" +
                           std::to_string(length) + " with Content-Range '" + t.content_range + "'";
          return false;
        }
      } else if (offset != 0) {
        t.abort_reason = "server ignored the Range request for " + what;
        return false;
      }
    }
    uint64_t take = std::min<uint64_t>(n, length - got);
    if (take && !sink(reinterpret_cast<const uint8_t*>(d), take)) {
      t.abort_reason = "cancelled";
      t.abort_transient = false;
      return false;
    }
    got += take;
    if (take < n) {
      t.abort_reason = "server sent more bytes of " + what + " than asked for (wrong length)";
      return false;
    }
    return true;
  };
  std::string range = std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  long status = perform(opt_, url, range, t);
  if (status != 200 && status != 206)
    throw HubError("cannot fetch " + what + ": HTTP " + std::to_string(status), status_advice(status),
                   status_transient(status), status);
  if (got != length)
    throw HubError(
        "connection ended after " + std::to_string(got) + " of " + std::to_string(length) + " bytes of " + what,
        "deltafin retries and resumes", true, status);
}

std::string HubClient::fetch_small(const std::string& repo, const std::string& revision, const HubFile& file) const {
  if (file.size > (256u << 20)) throw Error(file.path + " is too large to read into memory");
  std::string out;
  out.reserve(file.size);
  fetch_range(repo, revision, file.path, 0, file.size, [&](const uint8_t* d, size_t n) {
    out.append(reinterpret_cast<const char*>(d), n);
    return true;
  });
  ContentHasher h(file.hash_kind(), file.size);
  h.update(out.data(), out.size());
  if (h.hex_digest() != file.expected_hash())
    throw HubError(repo + "/" + file.path + " does not match its listed hash", "deltafin retries it", true, 0);
  return out;
}

}  // namespace deltafin
