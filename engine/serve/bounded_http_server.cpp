#include "serve/bounded_http_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace deltafin::serve {
namespace {

using steady = std::chrono::steady_clock;

constexpr size_t kRecvChunk = 4096;
// After a refusal the client may still be sending its head: reading a little more before closing
// lets the answer reach it (closing with unread bytes resets the connection), within bounds.
constexpr size_t kDrainBytes = size_t(1) << 20;
constexpr auto kDrainTime = std::chrono::seconds(1);

int wait_for(socket_t s, short events, int timeout_ms) {
  pollfd p{s, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

int to_ms(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

void address_of(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0)
    ip = host;
  if (addr.ss_family == AF_INET) port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  else if (addr.ss_family == AF_INET6) port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
}

// The connection's bytes: a head is first read into the buffer (bounded); the library then reads
// the buffered bytes, and past them straight from the socket (bodies have their own limits).
class HeadBufferedStream final : public httplib::Stream {
 public:
  enum class Head { Complete, Closed, TimedOut, LineTooLong, TooLarge };

  HeadBufferedStream(socket_t s, int read_ms, int write_ms) : sock_(s), read_ms_(read_ms), write_ms_(write_ms) {}

  bool is_readable() const override { return pos_ < buf_.size() || wait_for(sock_, POLLIN, read_ms_) > 0; }

  bool is_writable() const override {
    if (wait_for(sock_, POLLOUT, write_ms_) <= 0) return false;
    // The peer still there: nothing to read yet, or something (not EOF) to read.
    if (wait_for(sock_, POLLIN, 0) == 0) return true;
    char b;
    return ::recv(sock_, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ < buf_.size()) {
      const size_t n = std::min(size, buf_.size() - pos_);
      std::copy_n(buf_.data() + pos_, n, ptr);
      pos_ += n;
      return static_cast<ssize_t>(n);
    }
    if (wait_for(sock_, POLLIN, read_ms_) <= 0) return -1;
    for (;;) {
      const ssize_t n = ::recv(sock_, ptr, size, 0);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (wait_for(sock_, POLLOUT, write_ms_) <= 0) return -1;
    for (;;) {
      const ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, len, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // Waits for the next request's first byte; false when the connection idles past `idle_ms`,
  // closes, or the server stops.
  bool wait_for_request(int idle_ms, const std::atomic<socket_t>& server) {
    drop_consumed();
    if (!buf_.empty()) return true;
    const auto end = steady::now() + std::chrono::milliseconds(idle_ms);
    while (server != INVALID_SOCKET) {
      const int r = wait_for(sock_, POLLIN, 50);
      if (r > 0) return true;
      if (r < 0 || steady::now() >= end) return false;
    }
    return false;
  }

  // Reads until the buffer holds a whole head, as the library delimits it: the request line is the
  // first line ending in LF, and the head ends at the first later line that is exactly CRLF (lines
  // ending in a bare LF are skipped by the library, so they do not end it either).
  Head read_head(const HeadLimits& limits) {
    drop_consumed();
    size_t scanned = 0;  // bytes of complete lines already looked at
    bool request_line = true;
    const auto deadline = steady::now() + std::chrono::milliseconds(limits.deadline_ms);
    for (;;) {
      for (size_t nl; (nl = buf_.find('\n', scanned)) != std::string::npos;) {
        const size_t line_len = nl + 1 - scanned;
        if (request_line) {
          if (line_len > limits.request_line) return Head::LineTooLong;
          request_line = false;
        } else if (line_len == 2 && buf_[scanned] == '\r') {
          return nl + 1 > limits.head ? Head::TooLarge : Head::Complete;
        }
        scanned = nl + 1;
        if (scanned > limits.head) return Head::TooLarge;
      }
      if (request_line && buf_.size() > limits.request_line) return Head::LineTooLong;
      if (buf_.size() > limits.head) return Head::TooLarge;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
      if (left <= 0) return Head::TimedOut;
      const int r = wait_for(sock_, POLLIN, static_cast<int>(std::min<long long>(read_ms_, left)));
      if (r == 0) return buf_.empty() ? Head::Closed : Head::TimedOut;
      if (r < 0) return Head::Closed;
      char chunk[kRecvChunk];
      const ssize_t n = ::recv(sock_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Head::Closed;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Reads and discards what the client still sends, within kDrainBytes and kDrainTime.
  void drain() {
    const auto end = steady::now() + kDrainTime;
    size_t drained = 0;
    char chunk[kRecvChunk];
    while (drained < kDrainBytes && steady::now() < end) {
      if (wait_for(sock_, POLLIN, 100) <= 0) continue;
      const ssize_t n = ::recv(sock_, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      drained += static_cast<size_t>(n);
    }
  }

 private:
  void drop_consumed() {
    buf_.erase(0, pos_);
    pos_ = 0;
  }

  socket_t sock_;
  int read_ms_, write_ms_;
  std::string buf_;
  size_t pos_ = 0;
};

const char* reason(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
  }
  return "Bad Request";
}

// Set by the logger, which cpp-httplib calls on the connection's thread once a response is written.
thread_local bool t_response_closes = false;

}  // namespace

BoundedHttpServer::BoundedHttpServer(HeadLimits limits) : limits_(limits) {
  set_logger([](const httplib::Request&, const httplib::Response& res) {
    t_response_closes = res.get_header_value("Connection") == "close";
  });
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  HeadBufferedStream strm(sock, to_ms(read_timeout_sec_, read_timeout_usec_),
                          to_ms(write_timeout_sec_, write_timeout_usec_));
  bool ret = false;
  for (size_t left = keep_alive_max_count_; left > 0; --left) {
    if (!strm.wait_for_request(static_cast<int>(keep_alive_timeout_sec_ * 1000), svr_sock_)) break;
    const auto head = strm.read_head(limits_);
    if (head == HeadBufferedStream::Head::Closed) break;
    if (head != HeadBufferedStream::Head::Complete) {
      const int status = head == HeadBufferedStream::Head::TimedOut      ? 408
                         : head == HeadBufferedStream::Head::LineTooLong ? 414
                                                                         : 431;
      const std::string body = refusal_body ? refusal_body(status) : std::string();
      const std::string reply = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                                "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                                "\r\nConnection: close\r\n\r\n" + body;
      for (size_t sent = 0; sent < reply.size();) {
        const ssize_t n = strm.write(reply.data() + sent, reply.size() - sent);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::shutdown(sock, SHUT_WR);
      if (head != HeadBufferedStream::Head::TimedOut) strm.drain();
      ret = false;
      break;
    }
    bool connection_closed = false;
    t_response_closes = false;
    ret = process_request(strm, left == 1, connection_closed, nullptr);
    if (!ret || connection_closed || t_response_closes) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace deltafin::serve
