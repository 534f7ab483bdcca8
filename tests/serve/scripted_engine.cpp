#include "scripted_engine.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/k3_model.h"

namespace deltafin::test {

// The session keeps its context as ids; its saved "state" carries them (exact in floats below
// 2^24), so the server's state cache and prefix reuse work on it as on the real model.
class ScriptedSession final : public DecodeSession {
 public:
  ScriptedSession(ScriptedEngine& engine, const K3Model& model) : engine_(engine), model_(model) {}

  void stage(std::span<const int32_t> ids, std::vector<float>& logits, const PassOptions& opts) override {
    staged_.assign(ids.begin(), ids.end());
    const int V = model_.config().vocab;
    const size_t rows = opts.all_logits ? ids.size() : 1;
    logits.assign(rows * size_t(V), 0.f);
    std::vector<int32_t> context = committed_;
    for (size_t i = 0; i < ids.size(); ++i) {
      context.push_back(ids[i]);
      const bool wanted = opts.all_logits || i + 1 == ids.size();
      if (!wanted) continue;
      bool hold = false;
      const int32_t next = engine_.next_token(context, &hold);
      // Only single-row decode passes hold: prefill chunks never stand for an answer token.
      if (hold && ids.size() == 1) engine_.hold();
      float* row = logits.data() + (opts.all_logits ? i : 0) * size_t(V);
      // A clear winner and one runner-up, so log probabilities have something to show.
      row[size_t(next)] = 8.f;
      row[size_t((next + 1) % V)] = 4.f;
    }
  }
  void commit(int n) override {
    committed_.insert(committed_.end(), staged_.begin(), staged_.begin() + n);
    staged_.clear();
  }
  void rollback() override { staged_.clear(); }
  void reset() override {
    committed_.clear();
    staged_.clear();
  }
  int64_t n_past() const override { return static_cast<int64_t>(committed_.size()); }
  const K3Model& host_model() const override { return model_; }
  int max_rows() const override { return 64; }
  K3State save_state() const override {
    K3State st;
    st.n_past = n_past();
    st.kda.resize(1);
    for (int32_t id : committed_) st.kda[0].S.push_back(static_cast<float>(id));
    return st;
  }
  void load_state(K3State state) override {
    if (state.kda.size() != 1 || static_cast<int64_t>(state.kda[0].S.size()) != state.n_past)
      throw Error("not a scripted session's state");
    committed_.clear();
    for (float f : state.kda[0].S) committed_.push_back(static_cast<int32_t>(f));
    staged_.clear();
  }

 private:
  ScriptedEngine& engine_;
  const K3Model& model_;
  std::vector<int32_t> committed_, staged_;
};

ScriptedEngine::ScriptedEngine(const Tokenizer& tokenizer)
    : tok_(tokenizer), end_of_msg_(tokenizer.require_special_id("<|end_of_msg|>")) {
  for (const char* channel : {"think", "response"})
    openings_.push_back(
        tok_.encode(std::string("<|open|>message role=\"assistant\"<|sep|><|open|>") + channel + "<|sep|>",
                    /*allow_special=*/true));
}

void ScriptedEngine::on(const std::string& trigger, const std::string& reply, bool repeat, int hold_at) {
  std::lock_guard lk(mu_);
  rules_.push_back(Rule{trigger, tok_.encode(reply, /*allow_special=*/true), repeat, hold_at});
}

void ScriptedEngine::release() {
  {
    std::lock_guard lk(mu_);
    ++releases_;
  }
  cv_.notify_all();
}

void ScriptedEngine::open() {
  {
    std::lock_guard lk(mu_);
    open_ = true;
  }
  cv_.notify_all();
}

bool ScriptedEngine::wait_held(int n, std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return held_ >= n; });
}

std::string ScriptedEngine::last_prompt_text() const {
  std::lock_guard lk(mu_);
  return last_prompt_;
}

void ScriptedEngine::hold() {
  std::unique_lock lk(mu_);
  ++held_;
  cv_.notify_all();
  cv_.wait(lk, [&] { return releases_ > 0 || open_; });
  if (releases_ > 0) --releases_;
}

int32_t ScriptedEngine::next_token(const std::vector<int32_t>& context, bool* hold) {
  // Where the answer starts: just after the latest assistant opening.
  size_t start = 0;
  for (const auto& opening : openings_) {
    auto it = std::find_end(context.begin(), context.end(), opening.begin(), opening.end());
    if (it != context.end()) start = std::max(start, static_cast<size_t>(it - context.begin()) + opening.size());
  }
  if (start == 0) return end_of_msg_;
  const std::string prompt = tok_.decode(std::span<const int32_t>(context.data(), start));
  std::lock_guard lk(mu_);
  const Rule* rule = nullptr;
  size_t best = 0;
  for (const Rule& r : rules_) {
    const size_t at = prompt.rfind(r.trigger);
    if (at != std::string::npos && (!rule || at >= best)) {
      rule = &r;
      best = at;
    }
  }
  if (!rule || rule->reply.empty()) return end_of_msg_;
  const size_t k = context.size() - start;  // answer tokens so far
  if (k == 0) last_prompt_ = prompt;
  *hold = static_cast<int>(k) == rule->hold_at;
  if (k < rule->reply.size()) return rule->reply[k];
  return rule->repeat ? rule->reply[k % rule->reply.size()] : end_of_msg_;
}

std::function<std::unique_ptr<DecodeSession>(const K3Model&)> ScriptedEngine::session_factory() {
  return [this](const K3Model& model) -> std::unique_ptr<DecodeSession> {
    return std::make_unique<ScriptedSession>(*this, model);
  };
}

}  // namespace deltafin::test
