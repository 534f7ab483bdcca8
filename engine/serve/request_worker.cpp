#include "serve/request_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

#include "base/error.h"
#include "runtime/generate.h"
#include "serve/state_snapshot.h"
#include "serve/stop_matcher.h"
#include "tokenizer/chat_stream_parser.h"

namespace deltafin::serve {

using clock_type = std::chrono::steady_clock;

namespace {

// Thrown inside the job to unwind out of prefill when the client went away or time ran out.
struct JobAbandoned {
  bool timed_out;
};

// K3's format has no call ids: the server names each call, as OpenAI's do ("call_" + 24 hex).
std::string new_call_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char id[40];
  std::snprintf(id, sizeof id, "call_%016llx%08llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  return id;
}

// One OpenAI logprobs entry: the token, its log probability under the fp32 logits (softmax at
// temperature 1, as the model gives it), its bytes, and the `top` most likely alternatives.
nlohmann::json logprob_entry(const Tokenizer& tok, std::span<const float> logits, int32_t id, int top) {
  double mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, double(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  const double log_z = mx + std::log(sum);
  auto entry = [&](int32_t t) {
    const std::string& bytes = tok.token_bytes(t);
    nlohmann::json b = nlohmann::json::array();
    for (unsigned char c : bytes) b.push_back(int(c));
    return nlohmann::json{{"token", bytes}, {"logprob", double(logits[size_t(t)]) - log_z}, {"bytes", b}};
  };
  nlohmann::json e = entry(id);
  nlohmann::json alts = nlohmann::json::array();
  if (top > 0) {
    std::vector<int32_t> order(logits.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    const size_t k = std::min(order.size(), size_t(top));
    // Ties go to the lower id, so the list is a pure function of the logits.
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), [&](int32_t a, int32_t b) {
          return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
        });
    for (size_t i = 0; i < k; ++i) alts.push_back(entry(order[i]));
  }
  e["top_logprobs"] = alts;
  return e;
}

}  // namespace

RequestWorker::RequestWorker(const K3Model& model, const Tokenizer& tokenizer, JobQueue& queue, WorkerOptions options)
    : model_(model),
      tok_(tokenizer),
      queue_(queue),
      opt_(std::move(options)),
      session_(opt_.make_session ? opt_.make_session(model) : std::make_unique<K3Session>(model)),
      cache_(opt_.state_cache_bytes),
      memo_(opt_.memo_entries, opt_.memo_bytes) {
  if (!opt_.snapshot_dir.empty())
    store_ =
        std::make_unique<SnapshotStore>(opt_.snapshot_dir, model_fingerprint(model.root()), opt_.snapshot_max_bytes);
  const K3Config& c = model.config();
  if (c.eos_token_id >= 0) end_ids_.push_back(static_cast<int32_t>(c.eos_token_id));
  for (const char* name : {"<|end_of_msg|>", "[EOS]"})
    if (auto id = tok_.special_id(name)) end_ids_.push_back(*id);
  if (opt_.drafts) proposer_ = opt_.drafts->make_proposer();
  if (proposer_) {
    drafter_taps_ = !proposer_->tap_layers().empty();
    stats_.drafter = proposer_->name();
  }
}

RequestWorker::~RequestWorker() { stop(); }

void RequestWorker::start() {
  thread_ = std::thread([this] { loop(); });
}

void RequestWorker::stop() {
  if (thread_.joinable()) thread_.join();
}

WorkerStats RequestWorker::stats() const {
  std::lock_guard lk(stats_mu_);
  WorkerStats s = stats_;
  s.memo_entries = memo_.count();
  if (store_) {
    s.snapshot_files = store_->count();
    s.snapshot_bytes = store_->bytes();
  }
  return s;
}

void RequestWorker::loop() {
  while (auto job = queue_.pop()) {
    {
      std::lock_guard lk(stats_mu_);
      stats_.running = true;
    }
    const auto t0 = clock_type::now();
    run(*job);
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    std::lock_guard lk(stats_mu_);
    stats_.running = false;
    stats_.mean_job_seconds = stats_.jobs_done <= 1 ? secs : 0.8 * stats_.mean_job_seconds + 0.2 * secs;
  }
}

std::string RequestWorker::memo_key(const GenerationRequest& q) const {
  std::string k = q.kind == GenerationRequest::Kind::Chat ? "chat" : "text";
  k += q.thinking ? "|think" : "|plain";
  k += "|max=" + std::to_string(q.max_tokens);
  if (!q.parallel_tool_calls) k += "|one-call";
  if (!q.sampling.greedy()) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "|t=%a|p=%a|k=%d|seed=%llu", double(q.sampling.temperature),
                  double(q.sampling.top_p), q.sampling.top_k, static_cast<unsigned long long>(q.sampling.seed));
    k += buf;
  }
  for (const std::string& s : q.stop) k += "|stop=" + std::to_string(s.size()) + ":" + s;
  k += "|ids=";
  k.append(reinterpret_cast<const char*>(q.prompt.data()), q.prompt.size() * sizeof(int32_t));
  return k;
}

void RequestWorker::restore_longest_prefix(const std::vector<int32_t>& prompt, JobResult& r) {
  // At least the last prompt token must run, for the logits of the first new token.
  const size_t max_len = prompt.size() - 1;
  size_t live = 0;
  if (session_ids_.size() <= max_len && std::equal(session_ids_.begin(), session_ids_.end(), prompt.begin()))
    live = session_ids_.size();
  const size_t mem = cache_.best_prefix(prompt, max_len);
  const size_t disk = store_ ? store_->best_prefix(prompt, max_len) : 0;
  r.reuse_source = "none";
  if (live > 0 && live >= mem && live >= disk) {
    r.reuse_source = "session";
    return;
  }
  if (mem > 0 && mem >= disk) {
    if (auto st = cache_.get(prompt, mem)) {
      session_->load_state(std::move(*st));
      session_ids_.assign(prompt.begin(), prompt.begin() + mem);
      r.reuse_source = "memory";
      return;
    }
  }
  if (disk > 0) {
    if (auto st = store_->load(prompt, disk, model_.config())) {
      session_->load_state(std::move(*st));
      session_ids_.assign(prompt.begin(), prompt.begin() + disk);
      r.reuse_source = "disk";
      return;
    }
  }
  session_->reset();
  session_ids_.clear();
}

bool RequestWorker::drafter_follows_session() {
  if (!proposer_ || !drafter_taps_) return proposer_ != nullptr;
  const size_t n = session_ids_.size();
  if (drafter_seen_.size() >= n && std::equal(session_ids_.begin(), session_ids_.end(), drafter_seen_.begin())) {
    drafter_seen_.resize(n);  // begin(n) cuts the drafter back to the session
    return true;
  }
  // It saw other tokens (a restored state it never saw): a fresh one can only follow from empty.
  proposer_ = opt_.drafts->make_proposer();
  drafter_seen_.clear();
  return n == 0;
}

void RequestWorker::prefill_chunk(std::span<const int32_t> ids) {
  if (!drafter_in_step_) {
    session_->prefill(ids, opt_.prefill_chunk);
    return;
  }
  // The same pass as DecodeSession::prefill (one chunk, at most max_rows: see prefill_to), with
  // the layer outputs the drafter reads.
  ForwardTrace trace;
  trace.layer_out = true;
  PassOptions po;
  po.all_logits = false;
  po.trace = &trace;
  const int64_t pos0 = session_->n_past();
  session_->stage(ids, prefill_logits_, po);
  session_->commit(static_cast<int>(ids.size()));
  try {
    std::vector<const float*> taps;
    for (int l : proposer_->tap_layers()) taps.push_back(trace.layers.at(l).data());
    proposer_->on_commit(pos0, ids, taps);
    drafter_seen_.insert(drafter_seen_.end(), ids.begin(), ids.end());
  } catch (const std::exception&) {
    drafter_in_step_ = false;  // drafting stops; the answer does not change
  }
}

void RequestWorker::run(Job& job) {
  const GenerationRequest& q = job.req;
  const auto t0 = clock_type::now();
  {
    std::lock_guard lk(stats_mu_);
    job.started = ++started_;
  }
  auto note = [&](const std::string& finish, uint64_t tokens, bool cancelled, bool failed) {
    std::lock_guard lk(stats_mu_);
    stats_.jobs_done++;
    stats_.jobs_cancelled += cancelled;
    stats_.jobs_failed += failed;
    stats_.last_seq = job.seq;
    stats_.last_completion_tokens = tokens;
    stats_.last_finish = finish;
    stats_.state_cache_entries = cache_.count();
    stats_.state_cache_bytes = cache_.bytes();
  };
  if (job.cancelled) {
    note("cancelled", 0, true, false);
    job.fail(ApiError(499, "the client went away", {}, "cancelled"));
    return;
  }

  JobResult r;
  r.prompt_tokens = static_cast<int>(q.prompt.size());
  if (q.logprobs) r.logprobs = nlohmann::json::array();
  // Log probabilities come from running the model: such a request is never answered from memory.
  const std::string key = q.seeded && !q.logprobs ? memo_key(q) : std::string();
  if (!key.empty()) {
    if (auto hit = memo_.find(key)) {
      r.reasoning = hit->reasoning;
      r.content = hit->content;
      r.tool_calls = hit->tool_calls;
      for (ToolCallResult& c : r.tool_calls) c.id = new_call_id();
      r.finish_reason = hit->finish_reason;
      r.completion_tokens = hit->completion_tokens;
      r.reasoning_tokens = hit->reasoning_tokens;
      r.cached_tokens = r.prompt_tokens;
      r.memo_hit = true;
      r.reuse_source = "memo";
      if (q.stream) {
        Delta d;
        d.reasoning = r.reasoning;
        d.content = r.content;
        d.tool_calls = r.tool_calls;
        job.push_delta(std::move(d));
      }
      {
        std::lock_guard lk(stats_mu_);
        stats_.memo_hits++;
      }
      note(r.finish_reason, r.completion_tokens, false, false);
      job.finish(std::move(r));
      return;
    }
  }

  std::optional<std::pair<std::vector<int32_t>, K3State>> to_disk;
  auto abandoned = [&]() -> std::optional<JobAbandoned> {
    if (job.cancelled) return JobAbandoned{false};
    if ((opt_.now ? opt_.now() : clock_type::now()) > job.deadline) return JobAbandoned{true};
    return std::nullopt;
  };
  try {
    restore_longest_prefix(q.prompt, r);
    r.cached_tokens = static_cast<int>(session_ids_.size());
    const bool drafting = drafter_follows_session();
    drafter_in_step_ = drafting && drafter_taps_;

    // Prefill all but the last prompt token, stopping at the turn boundary to keep its state.
    const size_t end = q.prompt.size() - 1;
    auto prefill_to = [&](size_t target) {
      while (session_ids_.size() < target) {
        if (auto a = abandoned()) throw *a;
        const size_t pos = session_ids_.size();
        // One pass per chunk: a session may take fewer rows per pass than --prefill-chunk (the GPU's).
        const size_t rows = static_cast<size_t>(std::max(1, session_->max_rows()));
        const size_t n = std::min({target - pos, size_t(opt_.prefill_chunk), rows});
        prefill_chunk(std::span<const int32_t>(q.prompt.data() + pos, n));
        session_ids_.insert(session_ids_.end(), q.prompt.begin() + pos, q.prompt.begin() + pos + n);
        r.prefilled_tokens += static_cast<int>(n);
      }
    };
    const size_t boundary = q.turn_boundary;
    if (boundary > session_ids_.size() && boundary <= end) {
      prefill_to(boundary);
      K3State st = session_->save_state();  // one copy out of the session (a device download on the GPU)
      if (store_ && boundary >= opt_.snapshot_min_tokens) to_disk.emplace(session_ids_, st);
      cache_.put(session_ids_, st);
    }
    prefill_to(end);
    r.prefilled_tokens += 1;  // the last prompt token runs inside generate()

    const bool chat = q.kind == GenerationRequest::Kind::Chat;
    std::optional<ChatStreamParser> parser;
    std::optional<IncrementalDecoder> decoder;
    if (chat) parser.emplace(tok_, q.thinking);
    else decoder.emplace(tok_);
    StopMatcher matcher(q.stop);
    bool ended = false, timed_out = false;
    int count = 0;
    auto deliver = [&](Delta d) {
      if (d.empty()) return;
      r.reasoning += d.reasoning;
      r.content += d.content;
      r.tool_calls.insert(r.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
      if (q.logprobs)
        for (const auto& e : d.logprobs) r.logprobs.push_back(e);
      if (q.stream) job.push_delta(std::move(d));
    };
    auto text_delta = [](std::string reasoning, std::string content) {
      Delta d;
      d.reasoning = std::move(reasoning);
      d.content = std::move(content);
      return d;
    };
    nlohmann::json pending_logprob;  // the entry of the token being parsed, if it is an answer token
    auto on_events = [&](const std::vector<ChatEvent>& events) {
      Delta d;
      for (const ChatEvent& ev : events) {
        if (ev.kind == ChatEvent::Kind::Reasoning) d.reasoning += ev.text;
        else if (ev.kind == ChatEvent::Kind::Answer) d.content += matcher.push(ev.text);
        else if (ev.kind == ChatEvent::Kind::ToolCall && (q.parallel_tool_calls || r.tool_calls.empty()))
          d.tool_calls.push_back(ToolCallResult{new_call_id(), ev.text, ev.arguments});
      }
      if (!pending_logprob.is_null()) d.logprobs.push_back(std::move(pending_logprob));
      pending_logprob = nullptr;
      deliver(std::move(d));
    };
    GenerateOptions g;
    g.max_new = q.max_tokens;
    g.sampling = q.sampling;
    g.stop_ids = end_ids_;
    g.prefill_chunk = opt_.prefill_chunk;
    // A tap drafter that missed a prefill chunk sits this request out.
    if (drafting && (!drafter_taps_ || drafter_in_step_)) g.drafter = proposer_.get();
    g.draft_always = opt_.draft_always;
    std::span<const float> last_logits;
    if (q.logprobs) g.on_logits = [&](std::span<const float> logits) { last_logits = logits; };
    auto on_token = [&](int32_t id) -> bool {
      if (++count == 1) r.first_token_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
      if (chat) {
        if (parser->phase() == ChatStreamParser::Phase::Reasoning) r.reasoning_tokens++;
        // Log probabilities cover the answer's own tokens, not reasoning or structure.
        if (q.logprobs && parser->phase() == ChatStreamParser::Phase::Answer && !parser->in_tag() &&
            !tok_.is_special(id) && !last_logits.empty())
          pending_logprob = logprob_entry(tok_, last_logits, id, q.top_logprobs);
        on_events(parser->push(id));
        if (parser->done()) ended = true;
      } else {
        bool is_end = false;
        for (int32_t e : end_ids_) is_end |= (e == id);
        if (is_end) {
          ended = true;
        } else {
          Delta d = text_delta({}, matcher.push(decoder->push(id)));
          if (q.logprobs && !last_logits.empty())
            d.logprobs.push_back(logprob_entry(tok_, last_logits, id, q.top_logprobs));
          deliver(std::move(d));
        }
      }
      if (matcher.stopped()) ended = true;
      if (ended) return false;
      if (auto a = abandoned()) {
        timed_out = a->timed_out;
        return false;
      }
      return true;
    };
    // Text drafters read the history: the session holds all but the last prompt token already.
    const std::vector<int32_t> context_ids = session_ids_;  // stays put while generate() runs
    if (g.drafter && !drafter_taps_) g.draft_context = context_ids;
    GenerateResult gr = generate(*session_, std::span<const int32_t>(q.prompt.data() + end, 1), g, on_token);
    r.draft_proposed = gr.stats.proposed;
    r.draft_accepted = gr.stats.accepted;
    {
      std::lock_guard lk(stats_mu_);
      stats_.draft_proposed += gr.stats.proposed;
      stats_.draft_accepted += gr.stats.accepted;
      // Sitting a request out counts too: the drafter was configured but did not draft.
      stats_.draft_fallbacks += (proposer_ && !g.drafter) || !gr.stats.draft_fallback.empty();
    }
    session_ids_.push_back(q.prompt[end]);
    if (!gr.ids.empty()) session_ids_.insert(session_ids_.end(), gr.ids.begin(), gr.ids.end() - 1);
    if (session_->n_past() != static_cast<int64_t>(session_ids_.size())) {
      session_->reset();  // never guess what the state holds
      session_ids_.clear();
    }
    // A tap drafter saw every committed token unless it stopped; then it starts over next time.
    if (g.drafter && drafter_taps_) {
      if (gr.stats.draft_fallback.empty()) {
        drafter_seen_ = session_ids_;
      } else {
        drafter_seen_.clear();
        proposer_ = opt_.drafts->make_proposer();
      }
    }
    if (!ended) {
      if (chat) on_events(parser->finish());
      else deliver(text_delta({}, matcher.push(decoder->finish())));
      deliver(text_delta({}, matcher.finish()));
    }
    r.completion_tokens = static_cast<int>(gr.ids.size());
    r.finish_reason = !ended ? "length" : !r.tool_calls.empty() ? "tool_calls" : "stop";
    if (job.cancelled) {
      note("cancelled", r.completion_tokens, true, false);
      job.fail(ApiError(499, "the client went away", {}, "cancelled"));
    } else {
      if (!key.empty() && !timed_out)
        memo_.put(key, MemoAnswer{r.reasoning, r.content, r.tool_calls, r.finish_reason, r.completion_tokens,
                                  r.reasoning_tokens});
      note(r.finish_reason, r.completion_tokens, false, false);
      job.finish(std::move(r));
    }
  } catch (const JobAbandoned& a) {
    note(a.timed_out ? "timeout" : "cancelled", 0, !a.timed_out, a.timed_out);
    job.fail(a.timed_out
                 ? ApiError(504, "The request ran past the server's time limit (--request-timeout) during prefill.", {},
                            "timeout", "timeout")
                 : ApiError(499, "the client went away", {}, "cancelled"));
  } catch (const std::exception& e) {
    session_->reset();
    session_ids_.clear();
    note("error", 0, false, true);
    // The details (which can name files on this machine) go to the server's log, not the client.
    std::fprintf(stderr, "deltafin serve: the engine failed: %s\n", e.what());
    job.fail(ApiError(500, "The engine failed while answering this request; the server's log says why.", {},
                      "server_error"));
  }
  // After the answer went out: the disk write does not delay the client.
  if (to_disk) {
    try {
      store_->save(to_disk->first, to_disk->second);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "deltafin serve: could not save a state snapshot: %s\n", e.what());
    }
  }
}

}  // namespace deltafin::serve
