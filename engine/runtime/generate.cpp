#include "runtime/generate.h"

#include <chrono>

#include "runtime/speculative_decoder.h"

namespace deltafin {

GenerateResult generate(DecodeSession& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const std::function<bool(int32_t)>& on_token) {
  if (opts.drafter && !opts.on_logits) return generate_speculative(s, prompt, opts, on_token);
  using clock = std::chrono::steady_clock;
  GenerateResult r;
  r.stats.prompt_tokens = static_cast<int>(prompt.size());
  if (opts.max_new <= 0) return r;
  const int V = s.host_model().config().vocab;
  const uint64_t bytes0 =
      s.host_model().experts().counters().bytes_read + s.host_model().experts().counters().bytes_fetched;
  auto t0 = clock::now();
  std::vector<float> logits = s.prefill(prompt, opts.prefill_chunk);
  auto t1 = clock::now();
  r.stats.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  for (int i = 0; i < opts.max_new; ++i) {
    const int32_t next = sample_token(std::span<const float>(logits.data(), V), opts.sampling, s.n_past());
    if (i == 0) r.stats.first_token_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    if (opts.on_logits) opts.on_logits(std::span<const float>(logits.data(), V));
    r.ids.push_back(next);
    bool stop = false;
    for (int32_t sid : opts.stop_ids) stop |= (sid == next);
    if (on_token && !on_token(next)) {
      r.stopped_by_callback = true;
      stop = true;
    }
    if (stop || i + 1 == opts.max_new) break;
    PassOptions po;
    po.all_logits = false;
    const int32_t one[1] = {next};
    s.stage(one, logits, po);
    s.commit(1);
  }
  r.stats.new_tokens = static_cast<int>(r.ids.size());
  r.stats.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  r.stats.expert_bytes =
      s.host_model().experts().counters().bytes_read + s.host_model().experts().counters().bytes_fetched - bytes0;
  return r;
}

}  // namespace deltafin
