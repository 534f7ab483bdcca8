#pragma once
// cpp-httplib's Server with every request's head (request line and header lines) read and bounded
// before the library parses it. cpp-httplib 0.11 grows a line without limit until its newline
// arrives and keeps any number of header lines, so a client sending one endless line, or endless
// headers, could make the server hold as many bytes as it cares to send. Here each connection
// reads through a stream of its own: the head must end within HeadLimits, else the client gets
// 414 or 431 (Connection: close) and the connection is closed after a short bounded drain; a head
// that trickles in past its deadline gets 408. Only a complete head is handed to the library.
//
// Include only from files compiled with cpp-httplib's Cflags (serve/CMakeLists.txt).
#include <httplib.h>

#include <cstddef>
#include <functional>
#include <string>

namespace deltafin::serve {

struct HeadLimits {
  size_t request_line = 8192;  // bytes of the request line with its line end (414 beyond)
  size_t head = 64 * 1024;     // request line, header lines and the blank line (431 beyond)
  int deadline_ms = 60000;     // the whole head, from its first byte (408 beyond): each read has
                               // the read timeout, but a trickle of bytes must still end
};

// It also ends the connection after every response that says "Connection: close" (every error
// response of the server does), which cpp-httplib 0.11 does only when the request asked for it.
// It takes the library's logger for that: set_logger() must not be called on it.
class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(HeadLimits limits = {});
  // The JSON body of a refusal sent before the library saw the request (414, 431, 408).
  std::function<std::string(int status)> refusal_body;

 private:
  bool process_and_close_socket(socket_t sock) override;
  HeadLimits limits_;
};

}  // namespace deltafin::serve
