#pragma once
// Helpers for the server tests: a `deltafin serve` child process and a raw HTTP/1.1 client over
// plain sockets (so tests can also send what no well-behaved client would).
#include <QProcess>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deltafin::test {

// The bundled demo model the build extracts (trained, K3 format, with a tokenizer; resources/demo).
std::string demo_model_dir();
// The random-weight demo (`deltafin synth --preset demo`): for a test that needs a reply which never
// ends by itself, as the trained demo's replies do.
std::string demo_random_dir();

class ServerProcess {
 public:
  // Starts `deltafin serve --port 0 ARGS...` and waits for its "listening on" line.
  explicit ServerProcess(const std::vector<std::string>& args);
  ~ServerProcess();
  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  qint64 pid() const { return proc_.processId(); }
  long rss_kb() const;       // VmRSS from /proc
  long peak_rss_kb() const;  // VmHWM from /proc: the most it ever held
  std::string output();      // what it printed so far (stdout + stderr)
  bool running() const { return proc_.state() == QProcess::Running; }
  int stop();  // SIGTERM, wait, exit code

 private:
  mutable QProcess proc_;
  int port_ = -1;
  std::string log_;
};

struct HttpReply {
  int status = 0;                              // 0: no reply (connection closed or timed out)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
  bool closed_by_server = false;
  nlohmann::json json() const;                // the body as JSON (discarded on failure)
  std::vector<std::string> sse_data() const;  // the data: payloads of an event stream
};

// Parses a raw HTTP/1.1 reply (status line, headers, body de-chunked).
HttpReply parse_http_reply(const std::string& raw, bool closed_by_server);
// Sends `raw` bytes as they are, then reads the reply until the server closes or `timeout_ms`.
HttpReply http_raw(int port, const std::string& raw, int timeout_ms = 60000);
// A well-formed request with Connection: close.
HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body = {},
                       const std::vector<std::string>& headers = {}, int timeout_ms = 120000);
HttpReply post_json(int port, const std::string& path, const nlohmann::json& body,
                    const std::vector<std::string>& headers = {});

// A connection kept open by the test: send, read a little, then drop it (disconnect tests).
class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  bool send(const std::string& bytes);
  // Reads until `needle` has arrived (or timeout); returns everything read so far.
  std::string read_until(const std::string& needle, int timeout_ms);
  std::string read_until(const std::function<bool(const std::string&)>& done, int timeout_ms);
  // True when the server closed the connection before `timeout_ms` elapsed.
  bool wait_closed(int timeout_ms);
  void close();
  const std::string& received() const { return got_; }

 private:
  int fd_ = -1;
  std::string got_;
};

}  // namespace deltafin::test
