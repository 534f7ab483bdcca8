#include "runtime/speculative_decoder.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "runtime/speculative_economics.h"

namespace deltafin {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

GenerateResult generate_speculative(DecodeSession& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                                    const std::function<bool(int32_t)>& on_token) {
  GenerateResult r;
  GenerateStats& st = r.stats;
  st.prompt_tokens = static_cast<int>(prompt.size());
  if (opts.max_new <= 0) return r;
  DraftProposer& d = *opts.drafter;
  const K3Config& cfg = s.host_model().config();
  const int V = cfg.vocab;
  // A verify pass is the pending token and k guesses: at most the session's rows per pass.
  const int kmax = std::max(1, std::min(opts.draft_max > 0 ? opts.draft_max : d.preferred_k(), s.max_rows() - 1));
  st.pass_seconds.assign(kmax + 2, 0.0);
  st.pass_count.assign(kmax + 2, 0);

  bool drafting = true;
  auto fail = [&](const std::string& why) {
    drafting = false;
    if (st.draft_fallback.empty()) st.draft_fallback = why;
  };
  std::vector<int> taps;
  try {
    st.drafter = d.name();
    taps = d.tap_layers();
    for (int l : taps)
      if (l < 0 || l >= cfg.layers)
        throw std::runtime_error("drafter wants tap layer " + std::to_string(l) + " of a " +
                                 std::to_string(cfg.layers) + "-layer target");
    if (s.max_rows() < 2) fail("the session runs one row per pass: nothing to verify guesses with");
    else if (!d.begin(s.n_past())) fail("the drafter has not seen this session's earlier tokens");
  } catch (const std::exception& e) {
    fail(std::string("drafter failed to start: ") + e.what());
  }
  ForwardTrace trace;
  trace.layer_out = !taps.empty();
  std::vector<const float*> tap_rows(taps.size());
  auto tell_drafter = [&](int64_t pos0, std::span<const int32_t> ids) {
    if (!drafting) return;
    try {
      for (size_t i = 0; i < taps.size(); ++i) tap_rows[i] = trace.layers.at(taps[i]).data();
      d.on_commit(pos0, ids, tap_rows);
    } catch (const std::exception& e) {
      fail(std::string("drafter failed: ") + e.what());
    }
  };
  auto pass_trace = [&]() { return drafting && trace.layer_out ? &trace : nullptr; };

  const uint64_t bytes0 =
      s.host_model().experts().counters().bytes_read + s.host_model().experts().counters().bytes_fetched;
  const auto t0 = Clock::now();
  // Prefill in the same chunks as plain generate(), capturing the drafter's taps.
  std::vector<int32_t> history(opts.draft_context.begin(), opts.draft_context.end());
  history.insert(history.end(), prompt.begin(), prompt.end());
  std::vector<float> logits;
  const int chunk = std::max(1, std::min(opts.prefill_chunk, s.max_rows()));
  for (size_t i = 0; i < prompt.size(); i += chunk) {
    const size_t n = std::min<size_t>(chunk, prompt.size() - i);
    PassOptions po;
    po.all_logits = false;
    po.trace = pass_trace();
    const int64_t pos0 = s.n_past();
    s.stage(prompt.subspan(i, n), logits, po);
    s.commit(static_cast<int>(n));
    if (po.trace) tell_drafter(pos0, prompt.subspan(i, n));
  }
  const auto t1 = Clock::now();
  st.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

  auto emit = [&](int32_t id) {  // true = generation ends with this token
    r.ids.push_back(id);
    bool stop = std::find(opts.stop_ids.begin(), opts.stop_ids.end(), id) != opts.stop_ids.end();
    if (on_token && !on_token(id)) {
      r.stopped_by_callback = true;
      stop = true;
    }
    return stop || static_cast<int>(r.ids.size()) >= opts.max_new;
  };

  int32_t pending = sample_token(std::span<const float>(logits.data(), V), opts.sampling, s.n_past());
  st.first_token_seconds = since(t0);
  bool done = emit(pending);
  DraftEconomics econ(kmax);
  std::vector<int32_t> guesses, rows;
  while (!done) {
    const int remaining = opts.max_new - static_cast<int>(r.ids.size());
    int k = 0;
    if (drafting) k = std::min(opts.draft_always ? kmax : econ.choose_k(), remaining - 1);
    guesses.clear();
    double draft_s = 0;
    if (k > 0) {
      try {
        const auto td = Clock::now();
        d.propose(history, pending, k, guesses);
        draft_s = since(td);
        st.draft_seconds += draft_s;
        if (static_cast<int>(guesses.size()) > k) guesses.resize(k);
        // An id outside the target's vocabulary can never be accepted: cut there.
        auto bad = std::find_if(guesses.begin(), guesses.end(), [&](int32_t g) { return g < 0 || g >= V; });
        guesses.erase(bad, guesses.end());
      } catch (const std::exception& e) {
        guesses.clear();
        fail(std::string("drafter failed: ") + e.what());
      }
    }
    rows.assign(1, pending);
    rows.insert(rows.end(), guesses.begin(), guesses.end());
    const int T = static_cast<int>(rows.size());
    PassOptions po;
    po.all_logits = T > 1;
    po.partial_commit = T > 1;
    po.trace = pass_trace();
    const int64_t pos0 = s.n_past();
    const auto tp = Clock::now();
    s.stage(rows, logits, po);
    // Row i holds the target's distribution for position pos0 + i + 1.
    int keep = T, accepted = 0;
    for (int i = 0; i < T; ++i) {
      const int32_t t =
          sample_token(std::span<const float>(logits.data() + size_t(i) * V, V), opts.sampling, pos0 + i + 1);
      if (emit(t)) {
        done = true;
        keep = i + 1;
        break;
      }
      if (i + 1 < T && guesses[i] == t) {
        ++accepted;
        continue;
      }
      keep = i + 1;
      pending = t;
      break;
    }
    s.commit(keep);
    const double pass_s = since(tp);
    history.insert(history.end(), rows.begin(), rows.begin() + keep);
    if (po.trace) tell_drafter(pos0, std::span<const int32_t>(rows).first(keep));
    st.pass_seconds[T] += pass_s;
    ++st.pass_count[T];
    if (T > 1) {
      ++st.verify_passes;
      st.proposed += T - 1;
      st.accepted += accepted;
      econ.record_verify(T, pass_s, T - 1, accepted, draft_s);
    } else {
      ++st.plain_passes;
      econ.record_plain(pass_s);
    }
  }
  st.new_tokens = static_cast<int>(r.ids.size());
  st.decode_seconds = since(t1);
  st.expert_bytes =
      s.host_model().experts().counters().bytes_read + s.host_model().experts().counters().bytes_fetched - bytes0;
  return r;
}

}  // namespace deltafin
