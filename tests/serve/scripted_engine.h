#pragma once
// A test double for the model behind `deltafin serve`: a DecodeSession that runs no network and
// whose greedy answer is a script, so the server's parse paths (tool calls, reasoning, logprobs)
// see exactly the ids a test chose, and a hold point that blocks decoding until the test releases
// it, so queue and timeout tests never depend on how fast the machine decodes.
//
//   ScriptedEngine engine(tokenizer);
//   engine.on("weather in Paris", "<|close|>think<|sep|><|open|>response<|sep|>...<|end_of_msg|>");
//   options.worker.make_session = engine.session_factory();
//
// The answer is chosen by the conversation: the rule whose trigger text occurs latest in the
// prompt (before the assistant's opening) wins; the scripted ids then follow the generation
// prompt one by one. Past the script's end the engine says <|end_of_msg|> (or starts over, for a
// repeating rule). A prompt with no assistant opening (completions) gets <|end_of_msg|> at once.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/decode_session.h"
#include "tokenizer/tokenizer.h"

namespace deltafin::test {

class ScriptedEngine {
 public:
  explicit ScriptedEngine(const Tokenizer& tokenizer);

  // `reply`: text with special tokens spelled out (encoded with specials allowed). `hold_at`:
  // the pass that yields answer token `hold_at` (0-based) waits for release(); -1: never.
  void on(const std::string& trigger, const std::string& reply, bool repeat = false, int hold_at = -1);

  // Lets one held pass go on (a release given before the hold is reached is kept).
  void release();
  // No pass holds any more.
  void open();
  // Waits until `n` passes in all have reached their hold point; false after `timeout`.
  bool wait_held(int n, std::chrono::milliseconds timeout);
  // The prompt (the ids before the first answer token) of the most recent answer, as text.
  std::string last_prompt_text() const;

  std::function<std::unique_ptr<DecodeSession>(const K3Model&)> session_factory();

 private:
  friend class ScriptedSession;
  struct Rule {
    std::string trigger;
    std::vector<int32_t> reply;
    bool repeat;
    int hold_at;
  };
  // The token that follows `context`, and whether producing it is a hold point.
  int32_t next_token(const std::vector<int32_t>& context, bool* hold);
  void hold();

  const Tokenizer& tok_;
  std::vector<std::vector<int32_t>> openings_;  // <|open|>message role="assistant"<|sep|><|open|>think|response<|sep|>
  int32_t end_of_msg_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Rule> rules_;
  int releases_ = 0, held_ = 0;
  bool open_ = false;
  std::string last_prompt_;
};

// What a scripted server reads the time from: it moves only when the test advances it.
class FakeClock {
 public:
  std::chrono::steady_clock::time_point now() const {
    std::lock_guard lk(mu_);
    return t_;
  }
  void advance(std::chrono::seconds s) {
    std::lock_guard lk(mu_);
    t_ += s;
  }
  std::function<std::chrono::steady_clock::time_point()> function() {
    return [this] { return now(); };
  }

 private:
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point t_{std::chrono::hours(1)};
};

}  // namespace deltafin::test
