#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/draft_proposer.h"
#include "runtime/k3_model.h"
#include "drafts/qwen3_runner.h"

namespace deltafin {

enum class DraftChoice { Auto, Off, DSpark, Qwen, Ngram };

// "auto" | "off" | "dspark" | "qwen" | "ngram"; throws Error listing the choices.
DraftChoice parse_draft_choice(const std::string& s);
const char* draft_choice_name(DraftChoice c);

struct DraftSetupOptions {
  DraftChoice choice = DraftChoice::Auto;
  std::string draft_root;  // the drafter's folder; empty = the default places (draft_search_paths)
  bool chat = false;       // chat prompts: DSpark is the drafter made for them; Qwen is for raw text
  // Where Qwen3 runs: Auto = the GPU when this is a CUDA build and one is usable, else the CPU.
  Qwen3Device qwen_device = Qwen3Device::Auto;
};

// Where a drafter is looked for when no folder is given, in order.
std::vector<std::string> draft_search_paths(DraftChoice c, const std::string& k3_root);

// The drafter for one K3 target and its loaded weights. Creating it never fails
// for want of a drafter: missing files, a mismatched checkpoint or too little
// free memory leave proposer() null (plain decoding) with the reason in note().
class DraftSetup {
 public:
  static std::unique_ptr<DraftSetup> create(const K3Model& target, const DraftSetupOptions& opts);
  ~DraftSetup();
  DraftProposer* proposer() const { return proposer_.get(); }
  // Why the requested drafter is not used, or which one auto picked and from where.
  const std::string& note() const { return note_; }
  // A fresh proposer of the same kind (one per session), or null.
  std::unique_ptr<DraftProposer> make_proposer() const;

 private:
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;
  std::unique_ptr<DraftProposer> proposer_;
  std::string note_;
};

// Bytes of memory the system can still give without swapping (MemAvailable), 0 if unknown.
uint64_t available_memory_bytes();

}  // namespace deltafin
