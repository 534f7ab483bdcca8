#pragma once
// The server's request worker, the one thread that decodes: takes jobs from the FIFO queue one at
// a time, reuses the longest committed prefix it has (live session, RAM turn snapshots, disk
// snapshots), prefills the rest, decodes with the exact sampler, and streams text back through
// the job. Its session comes from WorkerOptions::make_session (deltafin::Engine::session_factory).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/draft_proposer.h"
#include "runtime/k3_model.h"
#include "drafts/speculative_drafters.h"
#include "serve/job_queue.h"
#include "serve/response_memo.h"
#include "serve/snapshot_store.h"
#include "serve/state_cache.h"
#include "tokenizer/tokenizer.h"

namespace deltafin::serve {

struct WorkerOptions {
  int prefill_chunk = 64;
  uint64_t state_cache_bytes = uint64_t(2) << 30;
  std::string snapshot_dir;  // empty: no disk snapshots
  uint64_t snapshot_max_bytes = uint64_t(16) << 30;
  size_t snapshot_min_tokens = 512;  // shorter prefixes are cheap to prefill again
  size_t memo_entries = 256;
  uint64_t memo_bytes = uint64_t(64) << 20;
  // Speculative decoding (the ids never change): null or a setup without a proposer = plain.
  const DraftSetup* drafts = nullptr;
  bool draft_always = false;  // verify guesses every step even when drafting does not pay (tests)
  // The session the worker decodes on (e.g. a GPU session); empty: the CPU K3Session.
  std::function<std::unique_ptr<DecodeSession>(const K3Model&)> make_session;
  // The clock request deadlines are read on; empty: std::chrono::steady_clock (tests set a
  // clock they advance themselves, so no test depends on how fast the machine decodes).
  std::function<std::chrono::steady_clock::time_point()> now;
};

struct WorkerStats {
  bool running = false;
  uint64_t jobs_done = 0, jobs_cancelled = 0, jobs_failed = 0, memo_hits = 0;
  uint64_t last_seq = 0, last_completion_tokens = 0;
  std::string last_finish;
  double mean_job_seconds = 0;
  uint64_t state_cache_entries = 0, state_cache_bytes = 0, snapshot_files = 0, snapshot_bytes = 0;
  uint64_t memo_entries = 0;
  std::string drafter;  // the drafter's name, "" = plain decoding
  uint64_t draft_proposed = 0, draft_accepted = 0, draft_fallbacks = 0;
};

class RequestWorker {
 public:
  RequestWorker(const K3Model& model, const Tokenizer& tokenizer, JobQueue& queue, WorkerOptions options);
  ~RequestWorker();
  RequestWorker(const RequestWorker&) = delete;
  RequestWorker& operator=(const RequestWorker&) = delete;

  void start();
  void stop();  // after the running job; the queue must be shut down first
  WorkerStats stats() const;

 private:
  void loop();
  void run(Job& job);
  void restore_longest_prefix(const std::vector<int32_t>& prompt, JobResult& r);
  std::string memo_key(const GenerationRequest& req) const;
  void prefill_chunk(std::span<const int32_t> ids);
  bool drafter_follows_session();

  const K3Model& model_;
  const Tokenizer& tok_;
  JobQueue& queue_;
  WorkerOptions opt_;
  std::unique_ptr<DecodeSession> session_;
  std::vector<int32_t> session_ids_;  // the tokens the session has committed
  StateCache cache_;
  std::unique_ptr<SnapshotStore> store_;
  ResponseMemo memo_;
  std::vector<int32_t> end_ids_;
  // One proposer follows the one session. A drafter that reads target taps (DSpark) must have
  // seen every committed token: drafter_seen_ is what it saw, and prefill feeds it while in step.
  std::unique_ptr<DraftProposer> proposer_;
  bool drafter_taps_ = false, drafter_in_step_ = false;
  std::vector<int32_t> drafter_seen_;
  std::vector<float> prefill_logits_;
  std::thread thread_;
  mutable std::mutex stats_mu_;
  WorkerStats stats_;
  uint64_t started_ = 0;
};

}  // namespace deltafin::serve
