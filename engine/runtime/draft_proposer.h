#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace deltafin {

// A drafter guesses the tokens that follow; the target (K3) verifies every guess
// and decides every token, so a proposer can only change speed, never output.
// One proposer follows one session: it sees every token the target commits.
class DraftProposer {
 public:
  virtual ~DraftProposer() = default;
  virtual std::string name() const = 0;

  // Target layers whose raw outputs (K3-SPEC.md section 3 step 5) this proposer
  // needs for every committed token, in the order it wants them. Empty: none.
  virtual std::vector<int> tap_layers() const { return {}; }

  // The session was (re)started with `n_past` tokens already committed that the
  // proposer may not have seen. Returns false when it cannot propose for it.
  virtual bool begin(int64_t n_past) { return true; }

  // The target committed `ids` at positions pos0, pos0+1, ...; `taps[i]` points
  // at ids.size() rows of the target's hidden width for tap_layers()[i].
  virtual void on_commit(int64_t pos0, std::span<const int32_t> ids, const std::vector<const float*>& taps) {}

  // Up to max_k guesses for the tokens after `pending` (the target's own choice
  // for the next position, not yet fed), given the committed ids this generate
  // call knows (`history`, possibly only a suffix of the session's tokens).
  virtual void propose(std::span<const int32_t> history, int32_t pending, int max_k, std::vector<int32_t>& out) = 0;

  // The proposal length the proposer is built for (DSpark: its block size).
  virtual int preferred_k() const { return 4; }
};

}  // namespace deltafin
