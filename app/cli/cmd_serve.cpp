// `deltafin serve`: the OpenAI-compatible server (engine/serve, docs/SERVER.md).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "deltafin/backend.h"
#include "deltafin/engine.h"
#include "serve/http_server.h"
#include "serve/state_snapshot.h"

namespace deltafin::cli {

namespace {

std::string default_snapshot_root() {
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else base = ".";
  return base + "/deltafin/snapshots";
}

// The key from --api-key-file: its first line, without surrounding spaces. A file keeps the key
// out of process listings, where --api-key puts it.
std::string read_api_key_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw Error("cannot read the API key file " + path, "check the path given to --api-key-file and its permissions");
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() < 65536;) text.append(buf, n);
  std::fclose(f);
  text = text.substr(0, text.find_first_of("\r\n"));
  const auto first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  if (first == std::string::npos)
    throw Error("the API key file " + path + " is empty", "write the key on its first line");
  return text.substr(first, last - first + 1);
}

}  // namespace

// Context of a GPU server when --max-context is not given (the Studio's GPU sessions hold as many).
constexpr int kGpuServeContext = 32768;

void add_serve(CLI::App& app) {
  struct Opts {
    serve::ServerOptions s;
    std::string root, snapshot_dir, api_key_file;
    bool no_snapshots = false;
    uint64_t state_cache_mb = 2048, snapshot_max_mb = 16384;
    int threads = 0;
    std::string draft = "auto", draft_model, device = "cpu";
    std::vector<std::string> served_names;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API (see docs/SERVER.md)");
  c->add_option("--model-root", o->root, "Model folder (default: the installed Kimi K3)");
  c->add_option("--host", o->s.host, "Address to listen on")->capture_default_str();
  c->add_option("--port", o->s.port, "Port (0 = any free port; the one chosen is printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  c->add_flag("--allow-remote", o->s.allow_remote, "Allow a --host reachable from other machines");
  // DELTAFIN_API_KEY is read in the callback, not through CLI11's envname: an environment value
  // would count as --api-key given and make --api-key-file fail with "--api-key excludes".
  auto* key =
      c->add_option("--api-key", o->s.api_key,
                    "Require 'Authorization: Bearer KEY' on every route but /health (visible in process listings: "
                    "prefer --api-key-file or DELTAFIN_API_KEY, used when neither option is given)");
  c->add_option("--api-key-file", o->api_key_file, "Read the API key from the first line of this file")->excludes(key);
  c->add_option("--model-id", o->s.model_id, "Model name clients send (default: the model folder's name)");
  c->add_option("--allowed-host", o->s.allowed_hosts,
                "A host name clients may reach the server by, besides IP addresses and localhost (repeatable)");
  c->add_option("--allow-origin", o->s.allowed_origins,
                "A web origin (scheme://host:port, or *) whose pages may call the API (repeatable)");
  c->add_option("--served-model-name", o->served_names,
                "Another name clients may send for the model (repeatable; 'kimi-k3' always works)");
  c->add_option("--max-body-bytes", o->s.max_body_bytes, "Largest request body")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1024), size_t(1) << 30));
  c->add_option("--max-tokens", o->s.max_tokens, "Most tokens in one response")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--max-context", o->s.max_context, "Most prompt + response tokens (0 = the model's limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  c->add_option("--queue-size", o->s.queue_size, "Requests that may wait behind the running one; more get 429")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1), size_t(4096)));
  c->add_option("--http-threads", o->s.http_threads, "HTTP connection threads (0 = queue size + 16)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  c->add_option("--read-timeout", o->s.read_timeout_s, "Seconds a request may stall while being sent")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  c->add_option("--body-deadline", o->s.body_deadline_s, "Seconds a request body may take to arrive in all")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  c->add_option("--write-timeout", o->s.write_timeout_s, "Seconds a client may stall while reading")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  c->add_option("--request-timeout", o->s.request_timeout_s, "Seconds for queue wait plus generation")
      ->capture_default_str()
      ->check(CLI::Range(1, 7 * 86400));
  c->add_option("--prefill-chunk", o->s.worker.prefill_chunk, "Prompt tokens per prefill pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  c->add_option("--state-cache-mb", o->state_cache_mb, "RAM for turn-boundary states")->capture_default_str();
  c->add_option("--snapshot-dir", o->snapshot_dir,
                "Folder for on-disk state snapshots (default: ~/.cache/deltafin/snapshots/<model>)");
  c->add_flag("--no-snapshots", o->no_snapshots, "Do not save state snapshots to disk");
  c->add_option("--snapshot-max-mb", o->snapshot_max_mb, "Disk budget for state snapshots")->capture_default_str();
  c->add_option("--snapshot-min-tokens", o->s.worker.snapshot_min_tokens,
                "Only snapshot turn boundaries at least this long")
      ->capture_default_str();
  c->add_option("--memo-entries", o->s.worker.memo_entries, "Identical-request answers kept (0 = off)")
      ->capture_default_str();
  c->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  c->add_option("--draft", o->draft,
                "Drafter: auto (DSpark, else n-gram), off, dspark, qwen or ngram (answers never change)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "off", "dspark", "qwen", "ngram"}));
  c->add_option("--draft-model", o->draft_model, "The drafter's model folder (default: beside the K3 folder)");
  c->add_flag("--draft-always", o->s.worker.draft_always, "Verify guesses every step even when drafting does not pay");
  add_device_option(c, o->device);
  c->callback([o] {
    wants_cuda(o->device);  // fails early when this build has no CUDA backend
    // Signals go to one waiting thread (below), so every thread started from here on blocks them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    if (!o->api_key_file.empty()) o->s.api_key = read_api_key_file(o->api_key_file);
    else if (const char* env = std::getenv("DELTAFIN_API_KEY"); o->s.api_key.empty() && env && *env) o->s.api_key = env;
    apply_threads(o->threads);
    const std::string root = o->root.empty() ? default_model_root() : o->root;
    EngineOptions eo;
    eo.model_root = root;
    eo.device = o->device;
    eo.draft.choice = o->draft;
    eo.draft.model_root = o->draft_model;
    eo.draft.chat = true;  // the server's main traffic; --draft qwen picks the raw-text drafter
    // The load's notes (a plan made because the spine does not fit the GPU, the owned spine's progress).
    eo.say = [](const std::string& s) { std::fprintf(stderr, "deltafin serve: %s\n", s.c_str()); };
    auto engine = Engine::load(std::move(eo));
    const DraftSetup& drafts = engine->drafts();
    if (o->draft != "off") std::fprintf(stderr, "deltafin serve: drafting: %s\n", engine->info().drafter_note.c_str());
    serve::ServerOptions s = o->s;
    s.model_aliases.insert(s.model_aliases.end(), o->served_names.begin(), o->served_names.end());
    s.worker.drafts = &drafts;
    s.worker.state_cache_bytes = o->state_cache_mb << 20;
    s.worker.snapshot_max_bytes = o->snapshot_max_mb << 20;
    if (!o->no_snapshots) {
      char fp[32];
      std::snprintf(fp, sizeof fp, "%016llx", static_cast<unsigned long long>(serve::model_fingerprint(root)));
      s.worker.snapshot_dir = o->snapshot_dir.empty() ? default_snapshot_root() + "/" + fp : o->snapshot_dir;
    }
    if (engine->on_gpu()) {
      // The GPU session reserves its MLA caches for the whole context up front: without
      // --max-context it holds kGpuServeContext tokens, and the server refuses longer requests.
      if (s.max_context == 0) s.max_context = kGpuServeContext;
      std::fprintf(stderr, "deltafin serve: decoding on the GPU, up to %d tokens per request (--max-context)\n",
                   s.max_context);
    }
    s.worker.make_session = engine->session_factory(int64_t(s.max_context) + 64);  // + the rows of one staged pass
    serve::OpenAiServer server(s, engine->model(), engine->tokenizer());
    const int port = server.bind();
    if (!serve::is_loopback_host(s.host))
      std::fprintf(stderr, "deltafin serve: WARNING: listening on %s, reachable from other machines%s\n",
                   s.host.c_str(),
                   s.api_key.empty() ? " WITHOUT an API key: anyone who can reach it can use it (set --api-key)" : "");
    std::printf("deltafin serve: listening on http://%s:%d (model '%s'%s)\n", s.host.c_str(), port,
                server.options().model_id.c_str(), s.api_key.empty() ? "" : ", API key required");
    std::fflush(stdout);
    std::thread([&server, stop_signals] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      server.stop();
    }).detach();
    server.serve();
    std::printf("deltafin serve: stopped\n");
  });
}

}  // namespace deltafin::cli
