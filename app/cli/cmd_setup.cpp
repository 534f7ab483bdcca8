// `deltafin setup --full | --stream`: installs K3 (+ DSpark, + Qwen add-ons) from the Hub.
#include <csignal>
#include <cstdlib>
#include <memory>

#include "base/error.h"
#include "commands.h"
#include "install/disk_space.h"
#include "model/model_root.h"
#include "install/setup.h"
#include "install/text_progress.h"

namespace deltafin::cli {

// Options every install command shares (setup, setup-qwen, cache warm).
struct HubCliOptions {
  std::string hub_url, model_root, revision, token_file, k3_repo, dspark_repo, qwen_repos;
  bool dry_run = false, json = false;
  int parts = 4;
  std::string part_size = "32MiB";
  long stall_timeout = 60;
};

void bind_hub_options(CLI::App* c, HubCliOptions& o) {
  c->add_option("--model-root", o.model_root,
                "K3's folder (default $DELTAFIN_MODEL_ROOT or ~/.local/share/deltafin/models/kimi-k3)");
  c->add_option("--hub-url", o.hub_url, "Hub base URL (default $DELTAFIN_HUB_URL or https://huggingface.co)");
  c->add_option("--revision", o.revision, "Install this revision of every repository instead of the pinned ones");
  c->add_option("--token-file", o.token_file, "File holding a Hub token for gated repos (default: $HF_TOKEN)");
  c->add_option("--qwen-repos", o.qwen_repos, "Comma-separated Qwen repositories instead of the pinned ones");
  c->add_flag("--dry-run", o.dry_run, "Show what would be downloaded and whether it fits; download nothing");
  c->add_flag("--json", o.json, "Progress and results as JSON lines on stdout");
  c->add_option("--parts", o.parts, "Parallel ranged requests per large file")->check(CLI::Range(1, 64));
  c->add_option("--part-size", o.part_size, "Smallest part a file is split into");
  c->add_option("--stall-timeout", o.stall_timeout, "Seconds without data before a transfer counts as stalled")
      ->check(CLI::Range(1, 3600));
}

SetupOptions setup_options_from(const HubCliOptions& o) {
  SetupOptions s;
  s.model_root = resolve_model_root(o.model_root);
  s.hub.base_url = resolve_hub_url(o.hub_url);
  s.hub.stall_timeout_s = o.stall_timeout;
  if (!o.token_file.empty()) {
    std::string t = read_text_file(o.token_file);
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    s.hub.token = t;
  } else if (const char* t = std::getenv("HF_TOKEN"); t && *t) {
    s.hub.token = t;
  }
  s.revision = o.revision;
  s.k3_repo = o.k3_repo;
  s.dspark_repo = o.dspark_repo;
  for (size_t start = 0; start < o.qwen_repos.size();) {
    size_t comma = o.qwen_repos.find(',', start);
    std::string r = o.qwen_repos.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!r.empty()) s.qwen_repos.push_back(r);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  s.dry_run = o.dry_run;
  s.tuning.parts = o.parts;
  s.tuning.min_part_bytes = parse_size(o.part_size);
  return s;
}

void run_setup_command(const SetupOptions& s, bool json) {
  TextProgress progress(json ? stdout : stderr, json);
  // Ctrl-C finishes the current checkpoint so the next run resumes cleanly.
  static std::atomic<bool> cancel{false};
  std::signal(SIGINT, [](int) { cancel = true; });
  std::signal(SIGTERM, [](int) { cancel = true; });
  run_setup(s, progress, &cancel);
}

void add_setup(CLI::App& app) {
  struct Opts : HubCliOptions {
    bool full = false, stream = false, include_qwen = false, without_dspark = false;
    std::string cache_size;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("setup", "Install Kimi K3 (+ DSpark) from the Hugging Face Hub, verified");
  auto* full = c->add_flag("--full", o->full, "Download every file as the Hub ships it (1.56 TB)");
  auto* stream = c->add_flag("--stream", o->stream, "Download metadata + non-expert weights; fetch experts on demand");
  full->excludes(stream);
  c->add_flag("--include-qwen", o->include_qwen, "Also install the Qwen3 0.6B/1.7B base add-ons");
  c->add_flag("--without-dspark", o->without_dspark, "Skip the DSpark drafter");
  c->add_option("--k3-repo", o->k3_repo, "K3 repository instead of the pinned one (mirrors, tests)");
  c->add_option("--dspark-repo", o->dspark_repo, "DSpark repository instead of the pinned one");
  c->add_option("--cache-size", o->cache_size,
                "Stream mode: cap of the expert cache (e.g. 300G); default half the free space");
  bind_hub_options(c, *o);
  c->callback([o] {
    if (!o->full && !o->stream)
      throw Error("setup needs --full or --stream", "see deltafin setup --help and docs/INSTALL.md");
    SetupOptions s = setup_options_from(*o);
    s.mode = o->stream ? SetupOptions::Mode::Stream : SetupOptions::Mode::Full;
    s.include_qwen = o->include_qwen;
    s.with_dspark = !o->without_dspark;
    if (!o->cache_size.empty()) {
      if (!o->stream)
        throw Error("--cache-size applies to --stream installs only", "drop --cache-size or use --stream");
      s.cache_cap = parse_size(o->cache_size);
    }
    run_setup_command(s, o->json);
  });
}

}  // namespace deltafin::cli
