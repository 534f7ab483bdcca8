#pragma once
// One request on its way through the server, and the bounded FIFO that feeds the engine worker.
// HTTP threads create jobs and wait on them; the single worker thread runs them in arrival order.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/api_error.h"
#include "serve/request_parser.h"
#include "serve/response_memo.h"

namespace deltafin::serve {

// What the answer gained since the last delta: reasoning and/or answer text, completed tool
// calls, and the log probabilities of the answer tokens (when asked for).
struct Delta {
  std::string reasoning, content;
  std::vector<ToolCallResult> tool_calls;
  nlohmann::json logprobs = nlohmann::json::array();
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty() && logprobs.empty(); }
};

struct JobResult {
  std::string finish_reason;  // "stop", "length" or "tool_calls"
  std::string reasoning, content;
  std::vector<ToolCallResult> tool_calls;
  nlohmann::json logprobs;  // the answer tokens' entries (an array) when asked for, else null
  int prompt_tokens = 0, completion_tokens = 0, reasoning_tokens = 0;
  int cached_tokens = 0;     // prompt tokens not prefilled again (reused state)
  int prefilled_tokens = 0;  // prompt tokens run through the model for this request
  bool memo_hit = false;
  double first_token_seconds = 0;              // from the start of the job
  std::string reuse_source;                    // "none", "session", "memory", "disk", "memo"
  int draft_proposed = 0, draft_accepted = 0;  // drafter guesses verified / kept (ids unchanged)
};

class Job {
 public:
  explicit Job(GenerationRequest r) : req(std::move(r)) {}

  const GenerationRequest req;
  uint64_t seq = 0;                  // arrival order (set by JobQueue::push)
  std::atomic<uint64_t> started{0};  // order in which the worker began it (0 = never)
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::atomic<bool> cancelled{false};

  // Worker side.
  void push_delta(Delta d);
  void finish(JobResult r);
  void fail(const ApiError& e);

  // HTTP side: waits up to `wait` for news; moves pending deltas into `out`. Returns true once
  // the job is over and every delta has been handed out.
  bool wait(std::chrono::milliseconds wait, std::vector<Delta>& out);
  // Blocks until the worker is done with the job (after a cancel, it stops within one step).
  void wait_done();
  std::optional<JobResult> result() const;
  std::optional<ApiError> error() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delta> deltas_;
  bool done_ = false;
  std::optional<JobResult> result_;
  std::optional<ApiError> error_;
};

class JobQueue {
 public:
  // `capacity`: jobs that may wait behind the one running.
  explicit JobQueue(size_t capacity) : capacity_(capacity) {}

  // False when the queue is full (the caller answers 429).
  bool push(const std::shared_ptr<Job>& job);
  // A place held for a request still being tokenized, so that only admitted requests cost the
  // tokenizer's time: admit() (false when full), then push_admitted() or withdraw().
  bool admit();
  void push_admitted(const std::shared_ptr<Job>& job);
  void withdraw();
  // Blocks for the next job; nullptr after shutdown().
  std::shared_ptr<Job> pop();
  // Takes a job out before it started (its client went away); false if it is no longer waiting.
  bool remove(const std::shared_ptr<Job>& job);
  size_t waiting() const;
  size_t capacity() const { return capacity_; }
  void shutdown();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  size_t capacity_;
  uint64_t next_seq_ = 1;
  size_t admitted_ = 0;  // places held by requests being tokenized
  bool shutdown_ = false;
};

}  // namespace deltafin::serve
