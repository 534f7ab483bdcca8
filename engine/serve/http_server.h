#pragma once
// The OpenAI-compatible HTTP front: routes, API key, body limits, the 429 queue policy, JSON and
// SSE responses, client-disconnect detection. HTTP threads only parse, validate and queue; the
// RequestWorker runs the model.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/k3_model.h"
#include "serve/request_worker.h"
#include "serve/job_queue.h"
#include "serve/request_parser.h"
#include "tokenizer/tokenizer.h"

namespace deltafin::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                                       // 0: any free port (printed on start)
  bool allow_remote = false;                             // required to bind beyond loopback
  std::string model_id;                                  // default: the model folder's name
  std::vector<std::string> model_aliases = {"kimi-k3"};  // other names clients may send (--served-model-name)
  // DNS rebinding: a request's Host must be an IP address, "localhost" or one of these names.
  std::vector<std::string> allowed_hosts;
  // Browser pages of these origins may call the API ("*": any); other cross-origin requests get 403.
  std::vector<std::string> allowed_origins;
  std::string api_key;  // empty: no key required
  size_t max_body_bytes = size_t(4) << 20;
  int max_tokens = 4096;         // tokens per response
  int max_context = 0;           // prompt + response; 0: the model's own limit
  size_t queue_size = 16;        // requests waiting behind the running one
  int http_threads = 0;          // 0: queue_size + 16
  int read_timeout_s = 10;       // a stalled request (slowloris) is dropped after this
  int body_deadline_s = 60;      // a body must arrive whole within this (a trickling client is dropped)
  int write_timeout_s = 30;      // a client that stops reading is dropped after this
  int request_timeout_s = 1800;  // queue wait + generation
  WorkerOptions worker;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);
// Whether a request's Host header (name or address, with or without a port) may be served: an
// IP address (a page cannot rebind a name to it), "localhost", or one of `allowed` (any case).
// A rebinding attack sends the attacker's own name, which is none of these.
bool host_header_allowed(const std::string& host_header, const std::vector<std::string>& allowed);

class OpenAiServer {
 public:
  // Throws Error for options that cannot work (remote bind without allow_remote, ...).
  OpenAiServer(ServerOptions options, const K3Model& model, const Tokenizer& tokenizer);
  ~OpenAiServer();

  // Binds the socket; returns the port. Throws Error when the address is taken.
  int bind();
  // Serves until stop(); starts the engine worker.
  void serve();
  // Safe from any thread (not from a signal handler).
  void stop();

  const ServerOptions& options() const { return opt_; }

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  ServerOptions opt_;
};

}  // namespace deltafin::serve
