#pragma once
// deltafin::Engine: the one way in for the applications (`deltafin run`, `deltafin serve`, the
// Studio). It loads a model with its tokenizer, picks the device, executes a placement budget,
// holds the drafter, opens sessions on the chosen backend and streams a turn's output as text.
// What it hands out (the model, sessions, generate()'s options and stats) are the engine's own
// types; docs/API.md describes the whole surface.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "deltafin/placement.h"
#include "runtime/generate.h"
#include "store/tiered_expert_source.h"
#include "tokenizer/chat_stream_parser.h"
#include "tokenizer/chat_template.h"

namespace deltafin {

class DraftSetup;
class Tokenizer;

// The speculative drafter (the ids never change with it, only the speed).
struct DraftOptions {
  std::string choice = "auto";  // auto, off, dspark, qwen or ngram
  std::string model_root;       // the drafter's folder; empty: beside the K3 folder
  bool chat = true;             // chat prompts: auto prefers DSpark; raw text: Qwen
  bool lenient = false;         // an unknown choice (an old settings file) means auto instead of an Error
};

struct EngineOptions {
  std::string model_root;
  // "cpu"; "cuda": the GPU, an Error when this build has no CUDA backend (before anything loads);
  // "auto": the GPU when one is usable, else the CPU with the reason in info().fallback_reason.
  std::string device = "cpu";
  // A GPU session that cannot start (too little memory, a driver problem): the CPU computes and
  // info().fallback_reason says why, instead of open_session() throwing.
  bool gpu_fallback = false;
  // Tokens a GPU session holds when open_session() is not told (its MLA caches are reserved up front).
  int64_t gpu_context = 32768;
  // The engine's RAM expert tier over direct reads; nullopt: experts read in place through the page cache.
  std::optional<StoreOptions> store;
  // Budgets for the placement planner, executed: the plan's spine placement (with device "cuda",
  // layers split between the GPU and the CPU as the plan says) and, without `store`, a RAM tier of
  // the plan's size. Without a budget the GPU forward holds the whole spine in VRAM where it fits
  // (else it is planned under free VRAM and RAM), and the CPU forward places its spine as a plan
  // under free memory says (placement.map_spine: mapped instead).
  PlacementOptions placement;
  bool report_plan = false;  // make a plan without a budget too (for statistics), when it can be made
  DraftOptions draft;
  bool offline = false;  // stream installs: only cached experts, never the network
  // Notes while loading (the plan's progress), one line each; empty: none.
  std::function<void(const std::string&)> say;
};

struct EngineInfo {
  std::string backend = "CPU";  // "CPU" or "CUDA"
  std::string fallback_reason;  // why the CPU computes when the GPU was asked for or preferred
  std::string gpu_error;        // gpu_fallback: what the GPU session said when it did not start
  std::string expert_source;    // where the experts are read from
  std::string drafter;          // the drafter's name, "" = plain decoding
  std::string drafter_note;     // which drafter was picked and from where, or why none
  std::string synth_preset;     // non-empty: a synthesized model with random weights
};

// How one turn's output is read as it is generated.
struct StreamOptions {
  bool chat = false;     // K3 chat format (reasoning, answer, tool calls); else raw text as Answer events
  bool thinking = true;  // chat: the prompt opened a reasoning block
  // The text of each token as soon as it is complete (UTF-8 whole); empty events are not sent.
  std::function<void(const std::vector<ChatEvent>&)> on_events;
  // After each token's text: false stops the turn (cancellation). A chat turn also stops at its end.
  std::function<bool(int32_t id)> on_token;
};

class Engine {
 public:
  // Loads the model (and executes the placement), its tokenizer and the drafter. Throws Error.
  static std::unique_ptr<Engine> load(EngineOptions options);  // not the drafter: see drafts()
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const K3Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The drafter's fields are filled once it has loaded (drafts(), below).
  const EngineInfo& info() const { return info_; }
  const EngineOptions& options() const { return opt_; }
  // The plan the load followed or reported (a budget, or report_plan); nullopt: none.
  const std::optional<placement::Plan>& plan() const { return plan_; }
  bool on_gpu() const { return gpu_; }

  // The drafter loads on first use (drafts(), new_proposer()), so a GPU session opened before it
  // gets the memory first. set_drafter() replaces it without reloading the model.
  void set_drafter(const DraftOptions& draft);
  const DraftSetup& drafts() const;
  // A fresh proposer for one session (it follows that session's tokens), or null: plain decoding.
  std::unique_ptr<DraftProposer> new_proposer() const;

  // A session on the chosen device. max_context: tokens a GPU session reserves (0: the options'
  // gpu_context); the CPU session grows as it goes. With gpu_fallback a GPU session that cannot
  // start gives a CPU one, and from then on the engine computes on the CPU.
  std::unique_ptr<DecodeSession> open_session(int64_t max_context = 0);
  // The same for a session owner on another thread (the server's worker), for this model.
  std::function<std::unique_ptr<DecodeSession>(const K3Model&)> session_factory(int64_t max_context) const;

  // Prompts: a chat rendered in K3's format, or raw text after the model's BOS.
  std::vector<int32_t> chat_prompt(std::span<const ChatMessage> messages, const ChatOptions& options) const;
  std::vector<int32_t> text_prompt(const std::string& text) const;
  // The ids that end a turn: raw text (the model's EOS, [EOS]) or chat (<|end_of_msg|>, [EOS]).
  std::vector<int32_t> text_stop_ids() const;
  std::vector<int32_t> chat_stop_ids() const;

  // Prefills `prompt` into the session and decodes (generate() in runtime/generate.h), turning
  // the ids into text events as they come.
  GenerateResult generate(DecodeSession& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                          const StreamOptions& stream) const;

 private:
  Engine() = default;

  EngineOptions opt_;
  std::unique_ptr<K3Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  mutable std::unique_ptr<DraftSetup> drafts_;
  std::optional<placement::Plan> plan_;
  mutable EngineInfo info_;
  bool gpu_ = false;
};

}  // namespace deltafin
