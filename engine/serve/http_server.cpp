#include "serve/http_server.h"

#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "serve/anthropic_messages.h"
#include "serve/api_error.h"
#include "serve/bounded_http_server.h"
#include "serve/openai_format.h"
#include "serve/peer_socket.h"
#include "serve/responses_api.h"
#include "serve/stream_writer.h"

namespace deltafin::serve {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(20);

json read_json_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return json();
  json j = json::parse(in, nullptr, false);
  return j.is_discarded() ? json() : j;
}

// Every error asks the client to end its connection, so that after something wrong (a body cut
// short, a request smuggled behind another) no second request is read from the same bytes.
void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_header("Connection", "close");
  res.set_content(dump_json(e.body()), "application/json");
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Constant time, so the key cannot be guessed a byte at a time from response times.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

bool host_header_allowed(const std::string& host_header, const std::vector<std::string>& allowed) {
  std::string host = lower(host_header);
  if (!host.empty() && host.front() == '[') {
    const size_t end = host.find(']');
    if (end == std::string::npos) return false;
    host = host.substr(1, end - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    host = host.substr(0, host.find(':'));
  }
  if (host.empty()) return false;
  if (host == "localhost") return true;
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1) return true;
  for (const std::string& name : allowed)
    if (lower(name) == host) return true;
  return false;
}

class OpenAiServer::Impl {
 public:
  Impl(const ServerOptions& opt, const K3Model& model, const Tokenizer& tok)
      : opt_(opt), model_(model), tok_(tok), queue_(opt.queue_size), worker_(model, tok, queue_, opt.worker) {
    const fs::path root = model.root();
    const json cfg = read_json_file(root / "config.json");
    int model_ctx = 0;
    if (cfg.is_object()) {
      const json& tc = cfg.contains("text_config") ? cfg["text_config"] : cfg;
      if (tc.is_object() && tc.contains("max_position_embeddings") && tc["max_position_embeddings"].is_number_integer())
        model_ctx = tc["max_position_embeddings"].get<int>();
    }
    if (model_ctx <= 0) model_ctx = 4096;
    parse_.tokenizer = &tok;
    parse_.model_id = opt.model_id;
    for (const std::string& a : opt.model_aliases)
      if (a != opt.model_id &&
          std::find(parse_.model_aliases.begin(), parse_.model_aliases.end(), a) == parse_.model_aliases.end())
        parse_.model_aliases.push_back(a);
    parse_.context_limit = opt.max_context > 0 ? std::min(opt.max_context, model_ctx) : model_ctx;
    parse_.max_tokens_limit = std::min(opt.max_tokens, parse_.context_limit - 1);
    const json gen = read_json_file(root / "generation_config.json");
    if (gen.is_object()) {
      if (gen.contains("temperature") && gen["temperature"].is_number())
        parse_.default_temperature = gen["temperature"].get<float>();
      if (gen.contains("top_p") && gen["top_p"].is_number()) parse_.default_top_p = gen["top_p"].get<float>();
    }
    const int threads = opt.http_threads > 0 ? opt.http_threads : static_cast<int>(opt.queue_size) + 16;
    http_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    http_.set_payload_max_length(opt.max_body_bytes);
    http_.set_read_timeout(opt.read_timeout_s, 0);
    http_.set_write_timeout(opt.write_timeout_s, 0);
    http_.set_keep_alive_timeout(5);
    http_.set_keep_alive_max_count(1000);
    http_.refusal_body = [](int status) {
      switch (status) {
        case 408:
          return dump_json(
              ApiError(
                  408,
                  "The request head did not arrive within --read-timeout of a pause, or whole within --body-deadline.",
                  {}, "invalid_request_error", "request_timeout")
                  .body());
        case 414:
          return dump_json(
              ApiError(414,
                       "The request line is too long (at most " + std::to_string(kHeadLimits.request_line) + " bytes).",
                       {}, "invalid_request_error", "uri_too_long")
                  .body());
        default:
          return dump_json(ApiError(431,
                                    "The request has too many or too large headers (at most " +
                                        std::to_string(kMaxHeaders) + " headers, " + std::to_string(kHeadLimits.head) +
                                        " bytes).",
                                    {}, "invalid_request_error", "headers_too_large")
                               .body());
      }
    };
    routes();
  }

  int bind() {
    if (opt_.port == 0) port_ = http_.bind_to_any_port(opt_.host);
    else port_ = http_.bind_to_port(opt_.host, opt_.port) ? opt_.port : -1;
    if (port_ <= 0)
      throw Error("could not listen on " + opt_.host + ":" + std::to_string(opt_.port),
                  "is another server using the port? pick another with --port");
    return port_;
  }

  void serve() {
    worker_.start();
    http_.listen_after_bind();
    queue_.shutdown();
    worker_.stop();
  }

  void stop() {
    stopping_ = true;  // waiting handlers cancel their jobs, so shutdown never waits for a long answer
    http_.stop();
    queue_.shutdown();
  }

 private:
  void routes() {
    http_.set_pre_routing_handler([this](const httplib::Request& req,
                                         httplib::Response& res) -> httplib::Server::HandlerResponse {
      if (req.headers.size() > kMaxHeaders) {
        send_error(res,
                   ApiError(431,
                            "The request has too many or too large headers (at most " + std::to_string(kMaxHeaders) +
                                " headers, " + std::to_string(kHeadLimits.head) + " bytes).",
                            {}, "invalid_request_error", "headers_too_large"));
        return httplib::Server::HandlerResponse::Handled;
      }
      // DNS rebinding: a page of another site whose name now points here sends its own name.
      // HTTP/1.1 requires a Host; only an HTTP/1.0 client may leave it out.
      const bool host_ok = req.has_header("Host")
                               ? host_header_allowed(req.get_header_value("Host"), opt_.allowed_hosts)
                               : req.version == "HTTP/1.0";
      if (!host_ok) {
        send_error(res, ApiError(403,
                                 "This server does not answer to that Host name; use an IP address or localhost, or "
                                 "start it with --allowed-host NAME.",
                                 {}, "invalid_request_error", "host_not_allowed"));
        return httplib::Server::HandlerResponse::Handled;
      }
      // Browsers send Origin with cross-origin requests: only the origins given may use the API.
      if (req.has_header("Origin")) {
        const std::string origin = req.get_header_value("Origin");
        const bool any =
            std::find(opt_.allowed_origins.begin(), opt_.allowed_origins.end(), "*") != opt_.allowed_origins.end();
        if (!any &&
            std::find(opt_.allowed_origins.begin(), opt_.allowed_origins.end(), origin) == opt_.allowed_origins.end()) {
          send_error(res, ApiError(403,
                                   "Cross-origin requests from web pages are refused; start the server with "
                                   "--allow-origin ORIGIN to let that page use it.",
                                   {}, "invalid_request_error", "origin_not_allowed"));
          return httplib::Server::HandlerResponse::Handled;
        }
        res.set_header("Access-Control-Allow-Origin", any ? "*" : origin);
        res.set_header("Vary", "Origin");
        if (req.method == "OPTIONS") {  // the preflight of an allowed origin
          res.status = 204;
          res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
          res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
          res.set_header("Access-Control-Max-Age", "600");
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      if (opt_.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      if (auth.compare(0, prefix.size(), prefix) == 0 && same_secret(auth.substr(prefix.size()), opt_.api_key))
        return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, ApiError(401,
                               auth.empty() ? "You didn't provide an API key. Send it as 'Authorization: Bearer KEY'."
                                            : "Incorrect API key provided.",
                               {}, "invalid_request_error", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    });
    http_.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) -> httplib::Server::HandlerResponse {
          if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
          std::string msg;
          switch (res.status) {
            case 404:
              msg = "Unknown request URL: " + req.method + " " + req.path + ".";
              break;
            case 413:
              msg = "The request body is too large for this server (--max-body-bytes).";
              break;
            case 414:
              msg = "The request URL is too long.";
              break;
            default:
              msg = "The HTTP request could not be processed (status " + std::to_string(res.status) + ").";
              break;
          }
          res.set_content(dump_json(ApiError(res.status, msg, {}, "invalid_request_error").body()), "application/json");
          res.set_header("Connection", "close");
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      // The details (which can name files on this machine) go to the server's log, not the client.
      std::fprintf(stderr, "deltafin serve: a request failed: %s\n", what.c_str());
      send_error(res, ApiError(500, "The server failed while answering this request; the server's log says why.", {},
                               "server_error"));
    });

    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) { health(res); });
    for (const std::string base : {"/v1", ""}) {
      http_.Get(base + "/models", [this](const httplib::Request&, httplib::Response& res) {
        json data = json::array({model_object(opt_.model_id)});
        for (const std::string& a : parse_.model_aliases) data.push_back(model_object(a));
        res.set_content(dump_json({{"object", "list"}, {"data", data}}), "application/json");
      });
      http_.Get(base + R"(/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
        const std::string name = req.matches[1];
        if (!serves(name))
          return send_error(
              res, ApiError(404, "The model '" + name + "' does not exist; this server serves " + served_names() + ".",
                            "model", "invalid_request_error", "model_not_found"));
        res.set_content(dump_json(model_object(name)), "application/json");
      });
      for (const auto& [api, route] :
           {std::pair{Api::Chat, "/chat/completions"}, std::pair{Api::Completions, "/completions"},
            std::pair{Api::Messages, "/messages"}, std::pair{Api::Responses, "/responses"}}) {
        const std::string path = base + route;
        http_.Post(path,
                   [this, api = api](const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& reader) { generation(api, req, res, reader); });
        http_.Get(path, [](const httplib::Request& req, httplib::Response& res) {
          res.set_header("Allow", "POST");
          send_error(
              res, ApiError(405, "Use POST for " + req.path + ".", {}, "invalid_request_error", "method_not_allowed"));
        });
      }
    }
    // Any other body is read with the same bounds before the 404: cpp-httplib would read it whole
    // (chunked or compressed, without a limit) for a route that has no body reader.
    auto unknown = [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
      std::string body;
      const bool has_body = req.has_header("Content-Length") ||
                            req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
      if (has_body && !read_body(req, res, reader, body)) return;
      send_error(
          res, ApiError(404, "Unknown request URL: " + req.method + " " + req.path + ".", {}, "invalid_request_error"));
    };
    http_.Post(".*", unknown);
    http_.Put(".*", unknown);
    http_.Patch(".*", unknown);
    http_.Delete(".*", unknown);
  }

  // The head's bytes are bounded before cpp-httplib parses it (BoundedHttpServer); the number of
  // header lines in it before any handler looks at them.
  static constexpr size_t kMaxHeaders = 100;
  static constexpr HeadLimits kHeadLimits{8192, 64 * 1024};

  json model_object(const std::string& name) const {
    return {{"id", name},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "deltafin"},
            {"max_model_len", parse_.context_limit}};
  }

  bool serves(const std::string& name) const {
    return name == opt_.model_id ||
           std::find(parse_.model_aliases.begin(), parse_.model_aliases.end(), name) != parse_.model_aliases.end();
  }

  std::string served_names() const {
    std::string names = "'" + opt_.model_id + "'";
    for (const std::string& a : parse_.model_aliases) names += ", '" + a + "'";
    return names;
  }

  clock_type::time_point now() const { return opt_.worker.now ? opt_.worker.now() : clock_type::now(); }

  void health(httplib::Response& res) {
    const WorkerStats s = worker_.stats();
    json j = {{"status", "ok"},
              {"model", opt_.model_id},
              {"queue", {{"waiting", queue_.waiting()}, {"capacity", queue_.capacity()}}},
              {"worker",
               {{"running", s.running},
                {"jobs_done", s.jobs_done},
                {"jobs_cancelled", s.jobs_cancelled},
                {"jobs_failed", s.jobs_failed},
                {"memo_hits", s.memo_hits},
                {"memo_entries", s.memo_entries},
                {"last_seq", s.last_seq},
                {"last_completion_tokens", s.last_completion_tokens},
                {"last_finish", s.last_finish},
                {"state_cache_entries", s.state_cache_entries},
                {"state_cache_bytes", s.state_cache_bytes},
                {"snapshot_files", s.snapshot_files},
                {"snapshot_bytes", s.snapshot_bytes}}},
              {"drafts",
               {{"drafter", s.drafter},
                {"proposed", s.draft_proposed},
                {"accepted", s.draft_accepted},
                {"fallbacks", s.draft_fallbacks}}}};
    res.set_content(dump_json(j), "application/json");
  }

  int retry_after_seconds() const {
    const double mean = std::max(0.1, worker_.stats().mean_job_seconds);
    return std::max(1, static_cast<int>(std::ceil(mean * double(queue_.waiting() + 1))));
  }

  // Reads a request body within --max-body-bytes (counted after decompression, chunked or not)
  // and --body-deadline; false after answering the error.
  bool read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                 std::string& body) {
    const bool chunked = req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
    if (!req.has_header("Content-Length") && !chunked) {
      // Without a length the body would only end when the client closes: refuse at once.
      send_error(res, ApiError(411, "Send the request body with a Content-Length (or chunked).", {},
                               "invalid_request_error", "length_required"));
      return false;
    }
    bool too_big = false, too_slow = false;
    const auto read_deadline = clock_type::now() + std::chrono::seconds(opt_.body_deadline_s);
    const bool read_ok = reader([&](const char* data, size_t n) {
      if (body.size() + n > opt_.max_body_bytes) {
        too_big = true;
        return false;
      }
      // Each read may come within --read-timeout and still never finish: the whole body has a deadline.
      if (clock_type::now() > read_deadline) {
        too_slow = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (too_big || res.status == 413) {
      send_error(res, ApiError(413,
                               "The request body is too large for this server (--max-body-bytes = " +
                                   std::to_string(opt_.max_body_bytes) + ").",
                               {}, "invalid_request_error", "request_too_large"));
      return false;
    }
    if (too_slow) {
      send_error(
          res,
          ApiError(408, "The request body did not arrive within " + std::to_string(opt_.body_deadline_s) + " seconds.",
                   {}, "invalid_request_error", "request_timeout"));
      return false;
    }
    if (!read_ok) {
      send_error(res, ApiError(400, "The request body could not be read.", {}, "invalid_request_error"));
      return false;
    }
    return true;
  }

  // The four APIs over one engine: Messages and Responses requests become chat requests.
  enum class Api { Chat, Completions, Messages, Responses };

  void send_api_error(Api api, httplib::Response& res, const ApiError& e) {
    if (api != Api::Messages) return send_error(res, e);
    res.status = e.status();
    res.set_header("Connection", "close");
    res.set_content(dump_json(anthropic_error_json(e)), "application/json");
  }

  void generation(Api api, const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    std::string body;
    if (!read_body(req, res, reader, body)) return;
    GenerationRequest request;
    try {
      json j = parse_json_body(body);
      if (api == Api::Messages) j = anthropic_to_chat_request(j);
      else if (api == Api::Responses) j = responses_to_chat_request(j);
      request = api == Api::Completions ? validate_completion_request(j, parse_) : validate_chat_request(j, parse_);
    } catch (const ApiError& e) {
      return send_api_error(api, res, e);
    } catch (const Error& e) {
      return send_api_error(api, res, ApiError(400, e.what(), {}, "invalid_request_error"));
    }
    const auto deadline = now() + std::chrono::seconds(opt_.request_timeout_s);
    // Only a request the queue has room for is tokenized: a flood costs parsing, not the tokenizer.
    if (!queue_.admit()) {
      res.set_header("Retry-After", std::to_string(retry_after_seconds()));
      return send_api_error(api, res,
                            ApiError(429,
                                     "The server is busy: " + std::to_string(queue_.capacity()) +
                                         " requests are already waiting. Retry after the time in Retry-After.",
                                     {}, "rate_limit_error", "queue_full"));
    }
    std::shared_ptr<Job> job;
    try {
      tokenize_request(request, parse_);
      job = std::make_shared<Job>(std::move(request));
    } catch (const ApiError& e) {
      queue_.withdraw();
      return send_api_error(api, res, e);
    } catch (const std::exception& e) {
      queue_.withdraw();
      return send_api_error(api, res, ApiError(400, e.what(), {}, "invalid_request_error"));
    }
    job->deadline = deadline;
    queue_.push_admitted(job);
    res.set_header("X-Deltafin-Seq", std::to_string(job->seq));
    const int fd =
        find_connection_socket(req.remote_addr, req.remote_port, req.local_port > 0 ? req.local_port : port_);
    const ResponseMeta meta = new_response_meta(api_id_prefix(api), job->req.model);
    if (job->req.stream) return stream(api, meta, job, fd, res);

    std::vector<Delta> ignored;
    for (;;) {
      if (job->wait(kPoll, ignored)) break;
      ignored.clear();
      if (peer_gone(fd)) {
        cancel(job);
        return;
      }
      if (stopping_) {
        cancel(job);
        return send_api_error(api, res,
                              ApiError(503, "The server is shutting down.", {}, "server_error", "shutting_down"));
      }
      if (job->started == 0 && now() > job->deadline && queue_.remove(job))
        return send_api_error(
            api, res,
            ApiError(504, "The request waited in the queue past the server's time limit (--request-timeout).", {},
                     "timeout", "timeout"));
    }
    if (auto e = job->error()) return send_api_error(api, res, *e);
    const JobResult r = *job->result();
    res.set_header("X-Deltafin-Started", std::to_string(job->started));
    res.set_header("X-Deltafin-Reuse", r.reuse_source);
    res.set_header("X-Deltafin-Prefilled", std::to_string(r.prefilled_tokens));
    json out;
    switch (api) {
      case Api::Chat:
        out = chat_completion_json(meta, r);
        break;
      case Api::Completions:
        out = text_completion_json(meta, r);
        break;
      case Api::Messages:
        out = anthropic_message_json(meta, r);
        break;
      case Api::Responses:
        out = response_json(meta, r);
        break;
    }
    res.set_content(dump_json(out), "application/json");
  }

  static std::string api_id_prefix(Api api) {
    switch (api) {
      case Api::Chat:
        return "chatcmpl-";
      case Api::Completions:
        return "cmpl-";
      case Api::Messages:
        return "msg_";
      case Api::Responses:
        return "resp_";
    }
    return "";
  }

  void cancel(const std::shared_ptr<Job>& job) {
    job->cancelled = true;
    if (!queue_.remove(job)) job->wait_done();  // it is running: the worker stops within one step
  }

  void stream(Api api, const ResponseMeta& meta, const std::shared_ptr<Job>& job, int fd, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    std::shared_ptr<StreamWriter> writer;
    switch (api) {
      case Api::Chat:
        writer = make_chat_stream_writer(meta, job->req.include_usage);
        break;
      case Api::Completions:
        writer = make_completion_stream_writer(meta, job->req.include_usage);
        break;
      case Api::Messages:
        writer = make_anthropic_stream_writer(meta, static_cast<int>(job->req.prompt.size()));
        break;
      case Api::Responses:
        writer = make_responses_stream_writer(meta);
        break;
    }
    auto begun = std::make_shared<bool>(false);
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, job, fd, writer, begun](size_t, httplib::DataSink& sink) {
          auto write = [&](const std::string& s) { return s.empty() || sink.write(s.data(), s.size()); };
          if (!*begun) {
            *begun = true;
            if (!write(writer->begin())) return false;
          }
          std::vector<Delta> deltas;
          const bool done = job->wait(kPoll, deltas);
          for (const Delta& d : deltas)
            if (!write(writer->delta(d))) return false;
          if (!done) {
            if (peer_gone(fd) || stopping_) return false;
            if (job->started == 0 && now() > job->deadline && queue_.remove(job)) {
              job->fail(ApiError(504,
                                 "The request waited in the queue past the server's time limit (--request-timeout).",
                                 {}, "timeout", "timeout"));
            }
            return true;
          }
          if (auto e = job->error()) write(writer->error(*e));
          else write(writer->end(*job->result()));
          sink.done();
          return true;
        },
        [this, job](bool success) {
          if (!success) cancel(job);
        });
  }

  const ServerOptions& opt_;
  const K3Model& model_;
  const Tokenizer& tok_;
  JobQueue queue_;
  RequestWorker worker_;
  ParseContext parse_;
  BoundedHttpServer http_{HeadLimits{kHeadLimits.request_line, kHeadLimits.head, opt_.body_deadline_s * 1000}};
  int port_ = -1;
  std::atomic<bool> stopping_{false};
};

OpenAiServer::OpenAiServer(ServerOptions options, const K3Model& model, const Tokenizer& tokenizer)
    : opt_(std::move(options)) {
  if (!is_loopback_host(opt_.host) && !opt_.allow_remote)
    throw Error("refusing to listen on " + opt_.host + ": it is reachable from other machines",
                "pass --allow-remote (and set --api-key) to serve beyond this machine");
  if (opt_.model_id.empty()) opt_.model_id = fs::path(model.root()).filename().string();
  if (opt_.model_id.empty()) opt_.model_id = fs::path(model.root()).parent_path().filename().string();
  if (opt_.queue_size == 0) throw Error("--queue-size must be at least 1");
  if (opt_.max_tokens < 1) throw Error("--max-tokens must be at least 1");
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  impl_ = std::make_unique<Impl>(opt_, model, tokenizer);
}

OpenAiServer::~OpenAiServer() = default;
int OpenAiServer::bind() { return impl_->bind(); }
void OpenAiServer::serve() { impl_->serve(); }
void OpenAiServer::stop() { impl_->stop(); }

}  // namespace deltafin::serve
