#include "test_hub.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "install/file_hash.h"

namespace fs = std::filesystem;

namespace deltafin::test {

namespace {

std::string hash_of(const std::string& bytes, HashKind k) {
  ContentHasher h(k, bytes.size());
  h.update(bytes.data(), bytes.size());
  return h.hex_digest();
}

bool send_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool send_str(int fd, const std::string& s) { return send_all(fd, s.data(), s.size()); }

std::string status_text(int s) {
  switch (s) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 302:
      return "Found";
    case 404:
      return "Not Found";
    case 416:
      return "Range Not Satisfiable";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
  }
  return "Status";
}

void send_simple(int fd, int status, const std::string& body, const std::string& extra = {}) {
  send_str(fd, "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\nConnection: close\r\n" + extra + "\r\n" + body);
}

}  // namespace

TestHub::TestHub() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0)
    throw Error("test hub cannot listen on 127.0.0.1");
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  accept_thread_ = std::thread([this] { serve(); });
}

TestHub::~TestHub() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  accept_thread_.join();
  std::vector<Worker> w;
  {
    std::lock_guard<std::mutex> g(mu_);
    w.swap(workers_);
  }
  for (auto& t : w) t.thread.join();
}

std::string TestHub::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void TestHub::add_repo(const std::string& repo, const std::string& revision, const std::string& dir) {
  std::vector<File> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    File f;
    f.path = fs::relative(e.path(), dir).string();
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    f.bytes = ss.str();
    f.size = f.bytes.size();
    // Like the Hub: weights and big binaries go through LFS, small text stays in git.
    f.lfs = f.path.ends_with(".safetensors") || f.path.ends_with(".model") || f.size > (1u << 20);
    f.git_oid = hash_of(f.bytes, HashKind::GitBlobSha1);
    f.sha256 = hash_of(f.bytes, HashKind::Sha256);
    files.push_back(std::move(f));
  }
  std::lock_guard<std::mutex> g(mu_);
  auto& v = repos_[repo + "@" + revision];
  for (auto& f : files) v.push_back(std::move(f));
}

void TestHub::add_listed_only(const std::string& repo, const std::string& revision, const std::string& path,
                              uint64_t size, const std::string& sha256) {
  File f;
  f.path = path;
  f.size = size;
  f.sha256 = sha256;
  f.git_oid = sha256.substr(0, 40);
  f.lfs = true;
  f.listed_only = true;
  std::lock_guard<std::mutex> g(mu_);
  repos_[repo + "@" + revision].push_back(std::move(f));
}

void TestHub::add_bytes(const std::string& repo, const std::string& revision, const std::string& path,
                        const std::string& bytes) {
  File f;
  f.path = path;
  f.bytes = bytes;
  f.size = bytes.size();
  f.lfs = path.ends_with(".safetensors");
  f.git_oid = hash_of(bytes, HashKind::GitBlobSha1);
  f.sha256 = hash_of(bytes, HashKind::Sha256);
  std::lock_guard<std::mutex> g(mu_);
  repos_[repo + "@" + revision].push_back(std::move(f));
}

void TestHub::add_fault(const HubFault& f) {
  std::lock_guard<std::mutex> g(mu_);
  faults_.push_back(f);
}

void TestHub::clear_faults() {
  std::lock_guard<std::mutex> g(mu_);
  faults_.clear();
}

void TestHub::set_redirect_to(const std::string& prefix) {
  std::lock_guard<std::mutex> g(mu_);
  redirect_prefix_ = prefix;
}

int TestHub::requests_matching(const std::string& needle) const {
  std::lock_guard<std::mutex> g(mu_);
  return static_cast<int>(std::count_if(log_.begin(), log_.end(),
                                        [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
}

bool TestHub::take_fault(const std::string& path, HubFault& out) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& f : faults_) {
    if (f.times == 0 || path.find(f.match) == std::string::npos) continue;
    if (f.times > 0) --f.times;
    out = f;
    return true;
  }
  return false;
}

const TestHub::File* TestHub::find(const std::string& repo, const std::string& rev, const std::string& path) const {
  auto it = repos_.find(repo + "@" + rev);
  if (it == repos_.end()) return nullptr;
  for (const auto& f : it->second)
    if (f.path == path) return &f;
  return nullptr;
}

void TestHub::serve() {
  while (!stop_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stop_) return;
      continue;
    }
    std::lock_guard<std::mutex> g(mu_);
    std::erase_if(workers_, [](Worker& w) {
      if (!w.done->load()) return false;
      w.thread.join();  // done is its last step: this returns at once
      return true;
    });
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back({std::thread([this, fd, done] {
                          handle(fd);
                          ::close(fd);
                          done->store(true);
                        }),
                        done});
  }
}

void TestHub::handle(int fd) {
  std::string req;
  char buf[4096];
  while (req.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    req.append(buf, static_cast<size_t>(n));
    if (req.size() > 65536) return;
  }
  std::istringstream in(req.substr(0, req.find("\r\n\r\n")));
  std::string method, target, version;
  in >> method >> target >> version;
  std::string line, range;
  bool authorized = false;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    if (name == "range") range = line.substr(colon + 1);
    if (name == "authorization") authorized = true;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    log_.push_back(method + " " + target + " " + range + (authorized ? " [authorization]" : ""));
  }
  std::string path = target.substr(0, target.find('?'));
  HubFault fault{};
  const bool faulty = take_fault(path, fault);
  if (faulty && (fault.kind == HubFault::Status500 || fault.kind == HubFault::Status503))
    return send_simple(fd, fault.kind == HubFault::Status500 ? 500 : 503, "injected failure");

  // /api/models/{org}/{name}/tree/{rev}
  if (path.rfind("/api/models/", 0) == 0) {
    std::string rest = path.substr(12);
    auto t = rest.find("/tree/");
    if (t == std::string::npos) return send_simple(fd, 404, "{}");
    std::string repo = rest.substr(0, t), rev = rest.substr(t + 6);
    nlohmann::json arr = nlohmann::json::array();
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = repos_.find(repo + "@" + rev);
      if (it == repos_.end()) return send_simple(fd, 404, "{\"error\":\"Repository not found\"}");
      std::vector<std::string> dirs;
      for (const auto& f : it->second) {
        nlohmann::json e = {{"type", "file"}, {"oid", f.git_oid}, {"size", f.size}, {"path", f.path}};
        if (f.lfs) e["lfs"] = {{"oid", f.sha256}, {"size", f.size}, {"pointerSize", 134}};
        arr.push_back(e);
        for (auto s = f.path.find('/'); s != std::string::npos; s = f.path.find('/', s + 1))
          dirs.push_back(f.path.substr(0, s));
      }
      std::sort(dirs.begin(), dirs.end());
      dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
      for (const auto& d : dirs) arr.push_back({{"type", "directory"}, {"oid", "0"}, {"size", 0}, {"path", d}});
    }
    return send_simple(fd, 200, arr.dump(), "Content-Type: application/json\r\n");
  }

  // /{org}/{name}/resolve/{rev}/{path} or /cdn/{org}/{name}/{rev}/{path}
  std::string repo, rev, file_path;
  bool via_cdn = path.rfind("/cdn/", 0) == 0;
  if (via_cdn) {
    std::string rest = path.substr(5);
    auto a = rest.find('/'), b = rest.find('/', a + 1), c = rest.find('/', b + 1);
    if (c == std::string::npos) return send_simple(fd, 404, "bad cdn path");
    repo = rest.substr(0, b);
    rev = rest.substr(b + 1, c - b - 1);
    file_path = rest.substr(c + 1);
  } else {
    auto r = path.find("/resolve/");
    if (r == std::string::npos) return send_simple(fd, 404, "not found");
    repo = path.substr(1, r - 1);
    std::string rest = path.substr(r + 9);
    auto s = rest.find('/');
    if (s == std::string::npos) return send_simple(fd, 404, "not found");
    rev = rest.substr(0, s);
    file_path = rest.substr(s + 1);
    std::string redirect;
    {
      std::lock_guard<std::mutex> g(mu_);
      redirect = redirect_prefix_;
    }
    if (!redirect.empty())
      return send_simple(fd, 302, "",
                         "Location: " + redirect + "/" + repo + "/" + rev + "/" + file_path + "?sig=secret\r\n");
  }
  File f;
  {
    std::lock_guard<std::mutex> g(mu_);
    const File* p = find(repo, rev, file_path);
    if (!p || p->listed_only || (faulty && fault.kind == HubFault::Missing)) {
      send_simple(fd, 404, "Entry not found");
      return;
    }
    f = *p;
  }
  uint64_t begin = 0, end = f.size;  // [begin, end)
  bool ranged = false;
  if (!range.empty() && !(faulty && fault.kind == HubFault::IgnoreRange)) {
    unsigned long long a = 0, b = 0;
    std::string r = range.substr(range.find_first_not_of(' '));
    if (std::sscanf(r.c_str(), "bytes=%llu-%llu", &a, &b) == 2) {
      begin = a;
      end = std::min<uint64_t>(b + 1, f.size);
    } else if (std::sscanf(r.c_str(), "bytes=%llu-", &a) == 1) {
      begin = a;
    }
    if (begin >= f.size || begin >= end)
      return send_simple(fd, 416, "", "Content-Range: bytes */" + std::to_string(f.size) + "\r\n");
    ranged = true;
  }
  std::string body = f.bytes.substr(begin, end - begin);
  if (faulty && fault.kind == HubFault::WrongBytes && !body.empty()) body[body.size() / 2] ^= 0x5A;
  if (faulty && fault.kind == HubFault::WrongLength) body += std::string(1000, 'x');
  std::string head = "HTTP/1.1 " + std::string(ranged ? "206 Partial Content" : "200 OK") +
                     "\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\nAccept-Ranges: bytes\r\n";
  if (ranged)
    head += "Content-Range: bytes " + std::to_string(begin) + "-" + std::to_string(begin + body.size() - 1) + "/" +
            std::to_string(f.size) + "\r\n";
  if (!send_str(fd, head + "\r\n")) return;
  const size_t chunk = 16384;
  for (size_t off = 0; off < body.size(); off += chunk) {
    if (faulty && (fault.kind == HubFault::DropMidBody || fault.kind == HubFault::Stall) && off >= body.size() / 2) {
      if (fault.kind == HubFault::Stall) std::this_thread::sleep_for(std::chrono::milliseconds(fault.stall_ms));
      return;  // the caller closes the socket: a dropped connection
    }
    size_t n = std::min(chunk, body.size() - off);
    if (!send_all(fd, body.data() + off, n)) return;
    if (uint64_t bps = bps_.load()) std::this_thread::sleep_for(std::chrono::microseconds(n * 1000000 / bps));
    if (stop_) return;
  }
}

}  // namespace deltafin::test
