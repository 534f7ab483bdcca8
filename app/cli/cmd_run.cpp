// `deltafin run`: raw completion or one chat turn, streamed as it is generated.
#include <cstdio>
#include <fstream>
#include <memory>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "cpu/gemm.h"
#include "deltafin/backend.h"
#include "deltafin/engine.h"
#include "placement/plan_report.h"
#include "placement/split_layout.h"
#include "plan_flags.h"
#include "runtime/k3_model.h"
#include "runtime/speculative_stats.h"

namespace deltafin::cli {

namespace {

uint64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

// cpu_session: the CPU session when the forward ran there (its state size is printed), else null.
void print_stats(const K3Model& m, const GenerateResult& r, const DecodeSession& s, const K3Session* cpu_session) {
  const auto& st = r.stats;
  const double processed = st.prompt_tokens + std::max(0, st.new_tokens - 1);
  std::fprintf(stderr, "\n--- stats ---\n");
  std::fprintf(stderr, "prompt tokens       %d (prefill %.3f s, %.1f tokens/s)\n", st.prompt_tokens, st.prefill_seconds,
               st.prefill_seconds > 0 ? st.prompt_tokens / st.prefill_seconds : 0.0);
  std::fprintf(stderr, "time to first token %.3f s\n", st.first_token_seconds);
  std::fprintf(stderr, "generated tokens    %d (decode %.3f s, %.2f tokens/s)\n", st.new_tokens, st.decode_seconds,
               st.decode_tokens_per_second());
  const auto c = m.experts().counters();
  std::fprintf(stderr, "expert bytes/token  %.2f MB read from disk (experts from %s)\n",
               processed > 0 ? st.expert_bytes / processed / 1e6 : 0.0, m.experts().describe().c_str());
  std::fprintf(stderr,
               "expert tiers        %llu requests: %llu RAM hits (%.1f%%), %llu disk reads, %llu network fetches\n",
               (unsigned long long)c.requests, (unsigned long long)c.ram_hits,
               c.requests ? 100.0 * c.ram_hits / c.requests : 0.0, (unsigned long long)c.disk_reads,
               (unsigned long long)c.net_fetches);
  if (const auto v = s.vram_tier()) {
    const double gib = v->slot_count * double(v->slot_bytes) / 1073741824.0;
    if (v->all_resident)
      std::fprintf(stderr, "VRAM tier           %d slots (%.1f GiB): every expert resident, no copies\n", v->slot_count,
                   gib);
    else
      std::fprintf(
          stderr,
          "VRAM tier           %d slots (%.1f GiB): %llu lookups, %llu hits (%.1f%%), %llu copied (%llu straight "
          "from the pinned RAM tier; %.1f MB host to GPU in %.3f s, %.1f GB/s)\n",
          v->slot_count, gib, (unsigned long long)v->requests, (unsigned long long)v->hits,
          v->requests ? 100.0 * v->hits / v->requests : 0.0, (unsigned long long)v->misses,
          (unsigned long long)v->direct, v->bytes_h2d / 1e6, v->fill_seconds,
          v->fill_seconds > 0 ? v->bytes_h2d / v->fill_seconds / 1e9 : 0.0);
  }
  if (const auto t = s.split_times()) {
    // Per device, per pass of that kind: "CPU 0.1810, GPU 0 0.0200, rest 0.0040".
    auto by_device = [&](bool one_row) {
      const std::vector<double> secs = t->per_pass(one_row);
      std::string out;
      for (size_t d = 0; d < secs.size(); ++d) {
        char b[64];
        const std::string name = d + 1 == secs.size() ? "rest" : d == 0 ? "CPU" : "GPU " + std::to_string(d - 1);
        std::snprintf(b, sizeof b, "%s%s %.4f", d ? ", " : "", name.c_str(), secs[d]);
        out += b;
      }
      return out;
    };
    if (t->decode_passes)
      std::fprintf(stderr, "split decode        %.4f s/token: %s\n", t->decode_seconds / double(t->decode_passes),
                   by_device(true).c_str());
    if (t->multi_passes)
      std::fprintf(stderr, "split prompt passes %llu, %.3f s each: %s\n", (unsigned long long)t->multi_passes,
                   t->multi_seconds / double(t->multi_passes), by_device(false).c_str());
    std::fprintf(
        stderr, "split state moves   %llu layer states moved between devices in %.3f s%s\n",
        (unsigned long long)t->state_moves, t->state_move_seconds,
        t->prefill_from_rows > 2
            ? ("; passes under " + std::to_string(t->prefill_from_rows) + " rows run where decode does").c_str()
            : "");
  }
  if (c.prefetch_issued)
    std::fprintf(stderr, "prefetch            %llu issued, %llu used, %llu wasted, %llu cancelled, %llu left unread\n",
                 (unsigned long long)c.prefetch_issued, (unsigned long long)c.prefetch_used,
                 (unsigned long long)c.prefetch_wasted, (unsigned long long)c.prefetch_cancelled,
                 (unsigned long long)c.prefetch_skipped);
  for (int d = 0; d < 2; ++d)
    if (c.guessed[d])
      std::fprintf(stderr,
                   "prediction %d ahead  %.1f%% of %llu guessed experts asked for (precision), %.1f%% of asked guessed "
                   "(recall)\n",
                   d + 1, 100.0 * c.guessed_right[d] / c.guessed[d], (unsigned long long)c.guessed[d],
                   c.guessed_demand[d] ? 100.0 * c.guessed_right[d] / c.guessed_demand[d] : 0.0);
  const uint64_t per_tok = m.kv_bytes_per_token(), avail = mem_available_bytes();
  std::fprintf(
      stderr,
      "context             %lld tokens held; MLA latent cache %.1f KiB/token, capacity ~%llu tokens in %.1f GiB free\n",
      static_cast<long long>(s.n_past()), per_tok / 1024.0,
      static_cast<unsigned long long>(per_tok ? avail / per_tok : 0), avail / 1073741824.0);
  if (cpu_session) {
    std::fprintf(stderr, "session state       %.1f MiB; CPU kernels %s\n", cpu_session->state_bytes() / 1048576.0,
                 kernels::active().name);
    const DecodePhases& ph = cpu_session->decode_phases();
    if (ph.passes > 0) {
      const double n = double(ph.passes);
      std::fprintf(stderr,
                   "decode phases       %.4f s/token over %lld one-row passes: attention %.4f, MoE and MLP %.4f, "
                   "output head %.4f, rest %.4f\n",
                   ph.total / n, static_cast<long long>(ph.passes), ph.attention / n, ph.mlp / n, ph.head / n,
                   (ph.total - ph.attention - ph.mlp - ph.head) / n);
      // The matrices' own rates, beside the planner's probed CPU BF16 and MXFP4 rates.
      auto rate = [](uint64_t b, double s) { return s > 0 ? double(b) / s / 1e9 : 0.0; };
      std::fprintf(stderr,
                   "decode matrices     %.4f s/token: BF16/F32 %.3f GB/token at %.1f GB/s, MXFP4 %.3f GB/token at "
                   "%.1f GB/s; everything else %.4f s/token\n",
                   (ph.dense_seconds + ph.mxfp4_seconds) / n, ph.dense_bytes / n / 1e9,
                   rate(ph.dense_bytes, ph.dense_seconds), ph.mxfp4_bytes / n / 1e9,
                   rate(ph.mxfp4_bytes, ph.mxfp4_seconds), (ph.total - ph.dense_seconds - ph.mxfp4_seconds) / n);
      std::fprintf(stderr,
                   "decode hand-overs   %.0f pool calls/token; the calling thread waited %.4f s/token at their ends "
                   "for the other threads (%.1f us a call)\n",
                   double(ph.pool_calls) / n, ph.pool_wait_seconds / n,
                   ph.pool_calls ? ph.pool_wait_seconds / double(ph.pool_calls) * 1e6 : 0.0);
    }
  } else std::fprintf(stderr, "forward             on the CUDA GPU (%d rows per pass at most)\n", s.max_rows());
}

}  // namespace

void print_plan_stats(const placement::Plan& p, const K3Model& m, double decode_s_per_token) {
  std::fprintf(stderr, "%s", placement::plan_gpus(p).c_str());  // each GPU's budget and layer range
  std::fprintf(stderr, "%s\n", placement::plan_summary(p).c_str());
  std::fprintf(stderr, "predicted decode    %.3f s/token (%s-bound); measured %.3f s/token (%.2fx the prediction)\n",
               p.decode.seconds_per_token, p.decode.bound.c_str(), decode_s_per_token,
               p.decode.seconds_per_token > 0 ? decode_s_per_token / p.decode.seconds_per_token : 0.0);
  if (const SpineStreamer* sp = m.spine()) {
    const auto st = sp->stats();
    std::fprintf(stderr, "spine               %s; %llu units streamed (%.1f MB), %.3f s waited for them\n",
                 sp->describe().c_str(), (unsigned long long)st.units_streamed, st.bytes_streamed / 1e6,
                 st.wait_seconds);
  } else {
    // --map-spine, or a plan whose host units are all mapped (they live in VRAM or its pinned copies).
    std::fprintf(stderr, "spine               read in place from the mapped shards (page cache)\n");
  }
}

void add_run(CLI::App& app) {
  struct Opts {
    std::string root, prompt, system, effort;
    int max_new = 256, threads = 0, top_k = 0;
    bool stats = false, chat = false, show_reasoning = false, no_think = false;
    float temperature = 0.f, top_p = 1.f;
    uint64_t seed = 0;
    StoreFlags store = [] {
      StoreFlags f;
      f.ram_gb = -1;  // below 0: experts in place through the page cache
      return f;
    }();
    bool offline = false;
    std::string draft = "auto", draft_model, device = "cpu";
    PlanFlags plan;
  };
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("run", "Generate text from a prompt (raw completion, or one chat turn with --chat)");
  c->add_option("--model-root", o->root,
                "Model folder (default: $DELTAFIN_MODEL_ROOT or ~/.local/share/deltafin/models/kimi-k3)");
  c->add_option("--prompt", o->prompt, "The prompt text")->required();
  c->add_option("--max-new", o->max_new, "Most tokens to generate")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  c->add_flag("--stats", o->stats, "Print time to first token, tokens/s, expert bytes per token, context capacity");
  c->add_flag("--chat", o->chat, "Treat the prompt as a user message in K3's chat format");
  c->add_option("--system", o->system, "System message (with --chat)");
  c->add_flag("--show-reasoning", o->show_reasoning, "Print the model's reasoning before the answer (with --chat)");
  c->add_flag("--no-think", o->no_think, "Answer without a reasoning block (with --chat)");
  c->add_option("--effort", o->effort, "Reasoning effort: low, high or max (with --chat)");
  c->add_option("--temperature", o->temperature, "0 = greedy (default)")->check(CLI::Range(0.f, 100.f));
  c->add_option("--top-p", o->top_p, "Nucleus sampling mass")->check(CLI::Range(0.f, 1.f));
  c->add_option("--top-k", o->top_k, "Sample among the k most likely tokens (0 = all)")->check(CLI::Range(0, 1 << 30));
  c->add_option("--seed", o->seed, "Seed for sampling (the same seed gives the same text)");
  c->add_option("--threads", o->threads, "Worker threads (0 = all cores)");
  c->add_option(
      "--ram-cache", o->store.ram_gb,
      "Engine RAM expert cache in GB over direct disk reads (0 = size from free memory; default: read experts "
      "in place through the page cache)");
  c->add_option("--policy", o->store.policy, "RAM cache eviction: lru, lfu or heat")->capture_default_str();
  c->add_flag("--no-prefetch", o->store.no_prefetch, "Disable router-lookahead prefetch");
  c->add_option("--guess-budget", o->store.guess_budget,
                "Prefetch guesses read per layer: auto (as many as the disk reads while a layer computes, the "
                "most confident first), all, or MB")
      ->capture_default_str();
  c->add_flag("--page-cache", o->store.page_cache, "Read experts through the page cache instead of O_DIRECT");
  c->add_option("--io", o->store.io, "Read engine: uring or pread")
      ->check(CLI::IsMember({"uring", "pread"}))
      ->capture_default_str();
  c->add_option("--heat", o->store.heat, "Persistent expert heat map file (seeds the heat policy)");
  c->add_flag("--offline", o->offline, "Stream installs: use only cached experts, never the network");
  c->add_option("--draft", o->draft, "Drafter: auto, off, dspark, qwen or ngram (the output never changes)")
      ->capture_default_str();
  c->add_option("--draft-model", o->draft_model, "The drafter's model folder (default: beside the K3 folder)");
  add_device_option(c, o->device);
  o->plan.add_budget_options(c);
  c->add_flag("--map-spine", o->plan.map_spine,
              "CPU without budgets: read the spine in place through the page cache (starts at once, decodes "
              "slower) instead of loading it into RAM as a plan under free memory places it");
  c->callback([o] {
    wants_cuda(o->device);  // fails early when this build has no CUDA backend
    apply_threads(o->threads);
    if (o->root.empty()) o->root = default_model_root();
    if (!o->chat && (o->show_reasoning || o->no_think || !o->effort.empty() || !o->system.empty()))
      throw Error("--system, --show-reasoning, --no-think and --effort apply to chat", "add --chat");
    EngineOptions eo;
    eo.model_root = o->root;
    eo.device = o->device;
    if (o->store.ram_gb >= 0) eo.store = o->store.options();
    eo.placement = o->plan;
    eo.report_plan = o->stats;
    eo.draft.choice = o->draft;
    eo.draft.model_root = o->draft_model;
    eo.draft.chat = o->chat;
    eo.offline = o->offline;
    eo.say = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
    auto engine = Engine::load(std::move(eo));
    const K3Model& model = engine->model();
    if (!engine->info().synth_preset.empty())
      std::fprintf(stderr, "note: %s is a synthesized '%s' model with RANDOM weights; its text is gibberish.\n",
                   o->root.c_str(), engine->info().synth_preset.c_str());

    std::vector<int32_t> prompt;
    GenerateOptions g;
    g.max_new = o->max_new;
    g.sampling.temperature = o->temperature;
    g.sampling.top_p = o->top_p;
    g.sampling.top_k = o->top_k;
    g.sampling.seed = o->seed;
    StreamOptions so;
    so.chat = o->chat;
    if (o->chat) {
      std::vector<ChatMessage> msgs;
      if (!o->system.empty()) msgs.emplace_back("system", o->system);
      msgs.emplace_back("user", o->prompt);
      ChatOptions co;
      co.thinking = !o->no_think;
      if (!o->effort.empty()) {
        auto e = parse_reasoning_effort(o->effort);
        if (!e) throw Error("--effort '" + o->effort + "' is not one of low, high, max");
        co.effort = *e;
      }
      prompt = engine->chat_prompt(msgs, co);
      so.thinking = co.thinking;
    } else {
      prompt = engine->text_prompt(o->prompt);
      g.stop_ids = engine->text_stop_ids();
    }
    // The session before any output: a missing GPU is reported before the prompt is echoed.
    const std::unique_ptr<DecodeSession> session = engine->open_session(int64_t(prompt.size()) + o->max_new + 1);
    DecodeSession& s = *session;
    if (!o->chat) std::fputs(o->prompt.c_str(), stdout);
    bool in_reasoning = false;
    so.on_events = [&](const std::vector<ChatEvent>& evs) {
      for (const auto& ev : evs) {
        if (ev.kind == ChatEvent::Kind::Reasoning && o->show_reasoning) {
          if (!in_reasoning) std::fputs("[reasoning]\n", stdout);
          in_reasoning = true;
          std::fputs(ev.text.c_str(), stdout);
        } else if (ev.kind == ChatEvent::Kind::Answer) {
          if (in_reasoning) std::fputs("\n[answer]\n", stdout);
          in_reasoning = false;
          std::fputs(ev.text.c_str(), stdout);
        }
      }
    };
    const auto proposer = engine->new_proposer();
    g.drafter = proposer.get();
    // Live counters go to a terminal status line only when the text itself is not on that terminal.
    const bool live = o->stats && ::isatty(STDERR_FILENO) && !::isatty(STDOUT_FILENO);
    int produced = 0;
    so.on_token = [&](int32_t) {
      std::fflush(stdout);
      ++produced;
      if (live) {
        // Live counters on the terminal's status line (stderr), refreshed per token.
        const auto c = model.experts().counters();
        std::fprintf(stderr, "\r\033[2K[%d tokens | RAM hit %.1f%% | %.1f MB read | prefetch %llu/%llu]", produced,
                     c.requests ? 100.0 * c.ram_hits / c.requests : 0.0, c.bytes_read / 1e6,
                     (unsigned long long)c.prefetch_used, (unsigned long long)c.prefetch_issued);
        std::fflush(stderr);
      }
      return true;
    };
    auto r = engine->generate(s, prompt, g, so);
    std::fputs("\n", stdout);
    if (o->stats) {
      print_stats(model, r, s, engine->on_gpu() ? nullptr : dynamic_cast<const K3Session*>(&s));
      if (const auto& plan = engine->plan())
        print_plan_stats(*plan, model,
                         r.stats.new_tokens > 1 ? r.stats.decode_seconds / (r.stats.new_tokens - 1) : 0.0);
      std::fprintf(stderr, "drafting            %s\n",
                   generate_stats_json(r.stats, engine->info().drafter_note).c_str());
    }
  });
}

}  // namespace deltafin::cli
