#include "serve_test_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QElapsedTimer>
#include <QFile>

#include <chrono>
#include <sstream>

#include "support/test_support.h"

namespace deltafin::test {

std::string demo_model_dir() { return build_dir() + "/demo-model"; }
std::string demo_random_dir() { return build_dir() + "/demo-random"; }

ServerProcess::ServerProcess(const std::vector<std::string>& args) {
  QStringList a{"serve", "--port", "0"};
  for (const auto& s : args) a << QString::fromStdString(s);
  proc_.setProcessChannelMode(QProcess::MergedChannels);
  proc_.start(QString::fromStdString(bin_dir() + "/deltafin"), a);
  if (!proc_.waitForStarted(10000)) return;
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < 120000 && proc_.state() == QProcess::Running) {
    proc_.waitForReadyRead(200);
    log_ += proc_.readAll().toStdString();
    const auto at = log_.find("listening on http://");
    if (at != std::string::npos) {
      const auto colon = log_.find(':', log_.find("//", at) + 2);
      const auto end = log_.find_first_not_of("0123456789", colon + 1);
      if (colon != std::string::npos && end != std::string::npos) {
        port_ = std::stoi(log_.substr(colon + 1, end - colon - 1));
        return;
      }
    }
  }
  log_ += proc_.readAll().toStdString();
}

ServerProcess::~ServerProcess() {
  if (proc_.state() == QProcess::Running) stop();
}

std::string ServerProcess::output() {
  log_ += proc_.readAll().toStdString();
  return log_;
}

namespace {
long status_kb(qint64 pid, const QByteArray& field) {
  QFile f(QString("/proc/%1/status").arg(pid));
  if (!f.open(QIODevice::ReadOnly)) return -1;
  for (const QByteArray& line : f.readAll().split('\n'))
    if (line.startsWith(field)) return line.mid(field.size()).trimmed().split(' ').first().toLong();
  return -1;
}
}  // namespace

long ServerProcess::rss_kb() const { return status_kb(proc_.processId(), "VmRSS:"); }
long ServerProcess::peak_rss_kb() const { return status_kb(proc_.processId(), "VmHWM:"); }

int ServerProcess::stop() {
  proc_.terminate();
  if (!proc_.waitForFinished(30000)) {
    proc_.kill();
    proc_.waitForFinished();
  }
  log_ += proc_.readAll().toStdString();
  return proc_.exitStatus() == QProcess::NormalExit ? proc_.exitCode() : -1;
}

nlohmann::json HttpReply::json() const { return nlohmann::json::parse(body, nullptr, false); }

std::vector<std::string> HttpReply::sse_data() const {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  return out;
}

namespace {

int connect_local(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += size_t(n);
  }
  return true;
}

// Reads into `got` until EOF, `stop(got)` or the deadline; true on EOF.
template <class Stop>
bool read_some(int fd, std::string& got, int timeout_ms, Stop stop) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[65536];
  while (!stop(got)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
    got.append(buf, size_t(n));
  }
  return false;
}

std::string dechunk(const std::string& s) {
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t eol = s.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const size_t len = std::stoul(s.substr(pos, eol - pos), nullptr, 16);
    if (len == 0) break;
    out.append(s, eol + 2, len);
    pos = eol + 2 + len + 2;
  }
  return out;
}

}  // namespace

HttpReply parse_http_reply(const std::string& raw, bool closed) {
  HttpReply r;
  r.closed_by_server = closed;
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  std::istringstream in(raw.substr(0, head_end));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t c = line.find(':');
    if (c == std::string::npos) continue;
    std::string k = line.substr(0, c);
    for (char& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    r.headers[k] = line.substr(line.find_first_not_of(' ', c + 1));
  }
  const std::string body = raw.substr(head_end + 4);
  r.body = r.headers["transfer-encoding"] == "chunked" ? dechunk(body) : body;
  return r;
}

HttpReply http_raw(int port, const std::string& raw, int timeout_ms) {
  const int fd = connect_local(port);
  if (fd < 0) return {};
  std::string got;
  bool closed = false;
  if (send_all(fd, raw)) closed = read_some(fd, got, timeout_ms, [](const std::string&) { return false; });
  else closed = read_some(fd, got, 2000, [](const std::string&) { return false; });
  ::close(fd);
  return parse_http_reply(got, closed);
}

HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body,
                       const std::vector<std::string>& headers, int timeout_ms) {
  std::string raw = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& h : headers) raw += h + "\r\n";
  if (!body.empty() || method == "POST") {
    raw += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  raw += "\r\n" + body;
  return http_raw(port, raw, timeout_ms);
}

HttpReply post_json(int port, const std::string& path, const nlohmann::json& body,
                    const std::vector<std::string>& headers) {
  return http_request(port, "POST", path, body.dump(), headers);
}

RawConnection::RawConnection(int port) : fd_(connect_local(port)) {}
RawConnection::~RawConnection() { close(); }
bool RawConnection::send(const std::string& bytes) { return fd_ >= 0 && send_all(fd_, bytes); }

std::string RawConnection::read_until(const std::string& needle, int timeout_ms) {
  if (fd_ >= 0)
    read_some(fd_, got_, timeout_ms, [&](const std::string& g) { return g.find(needle) != std::string::npos; });
  return got_;
}

std::string RawConnection::read_until(const std::function<bool(const std::string&)>& done, int timeout_ms) {
  if (fd_ >= 0) read_some(fd_, got_, timeout_ms, done);
  return got_;
}

bool RawConnection::wait_closed(int timeout_ms) {
  if (fd_ < 0) return true;
  return read_some(fd_, got_, timeout_ms, [](const std::string&) { return false; });
}

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace deltafin::test
