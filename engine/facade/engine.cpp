#include "deltafin/engine.h"

#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "deltafin/backend.h"
#include "drafts/speculative_drafters.h"
#include "placement/cpu_spine.h"
#include "placement/model_byte_map.h"
#include "placement/planner.h"
#include "placement/split_layout.h"
#include "runtime/k3_model.h"
#include "tokenizer/tokenizer.h"

namespace deltafin {

namespace {

// Whether the CUDA forward's default (the whole spine in GPU 0's VRAM) fits that GPU's free memory
// less the margin the planner leaves. Unknown (no byte map, no GPU listed): assumed to fit, the
// path this engine always took without budgets.
bool whole_spine_fits(const EngineOptions& o) {
  try {
    const placement::ModelByteMap bytes = placement::ModelByteMap::for_model_root(o.model_root);
    const auto gpus = cuda_gpus();
    if (gpus.empty()) return true;
    return placement::whole_spine_fits_gpu(bytes, gpus[0].usable_bytes(), o.gpu_context);
  } catch (const std::exception&) {
    return true;
  }
}

// The plan a load executes under a budget (on the CPU its spine placement; with a GPU the host side
// of the split, the GPU side following in make_cuda_session; and a RAM tier of the plan's size when
// no store options were given), or only reports (report_plan). Without budgets:
// - the CUDA forward holds the whole spine in VRAM where it fits (no plan describes that run, so
//   none is made); where it does not (real K3 on a 24-96 GB GPU) the load is planned under free
//   VRAM and free RAM and runs that plan, as with budgets;
// - a CPU load takes its spine placement from a plan under free memory (unless map_spine): the
//   spine in huge pages decoded a third faster than mapped in 4 KB page-cache pages. That plan
//   needs no rates (on the CPU the spine goes to RAM first whatever they are), so nothing is
//   measured for it.
std::optional<placement::Plan> plan_load(const EngineOptions& o, bool gpu, K3Model::Options& mo) {
  const bool budgets = o.placement.has_budget();
  bool planned = budgets;  // the plan is executed, and reported
  if (gpu && !budgets) {
    if (whole_spine_fits(o)) return std::nullopt;
    planned = true;
    if (o.say)
      o.say(
          "the spine does not fit in the GPU's free memory: planning across VRAM, RAM and disk (--vram-budget and "
          "--ram-budget set the limits)");
  }
  const bool cpu_default = !gpu && !budgets && !o.placement.map_spine;
  if (!planned && !o.report_plan && !cpu_default) return std::nullopt;
  PlacementOptions p = o.placement;
  p.use_gpus = gpu;
  if (!planned && !o.report_plan) p.probe = false;
  std::optional<placement::Plan> plan;
  try {
    plan = make_placement_plan(p, o.model_root, planned || o.report_plan ? o.say : nullptr);
  } catch (const Error& e) {
    if (planned) throw;  // a budget that cannot be planned is the user's error to see
    // Placement never changes results: the spine is then read in place.
    if (o.say && o.report_plan) o.say(std::string("plan: unavailable (") + e.what() + "); the spine is mapped");
    return std::nullopt;
  }
  if (planned || cpu_default)
    mo.spine = gpu ? placement::host_spine_placement(*plan) : placement::cpu_spine_placement(*plan);
  // Under a plan the experts go through the engine's RAM tier (direct reads), sized by the plan.
  if (planned && !o.store) {
    StoreOptions so;
    placement::size_ram_tier(*plan, so);
    mo.store = so;
  }
  if (!planned && !o.report_plan) return std::nullopt;  // its rates are assumed: nothing to report
  return plan;
}

}  // namespace

std::unique_ptr<Engine> Engine::load(EngineOptions options) {
  std::unique_ptr<Engine> e(new Engine);
  e->opt_ = std::move(options);
  const EngineOptions& o = e->opt_;
  if (o.device == "cuda") {
    e->gpu_ = wants_cuda(o.device);  // fails before loading when this build has no CUDA backend
  } else if (o.device == "auto") {
    const CudaProbe p = probe_cuda();
    e->gpu_ = p.status == CudaProbe::Status::Usable;
    if (p.status == CudaProbe::Status::NotBuilt) e->info_.fallback_reason = "this build has no CUDA support";
    else if (p.status == CudaProbe::Status::NoDevice) e->info_.fallback_reason = "no usable NVIDIA GPU: " + p.reason;
  } else if (o.device != "cpu") {
    throw Error("unknown device '" + o.device + "'", "choose cpu, cuda or auto");
  }
  if (o.offline) ::setenv("DELTAFIN_OFFLINE", "1", 1);  // read by the stream cache

  K3Model::Options mo;
  if (o.store) mo.store = *o.store;
  mo.say = o.say;
  e->plan_ = plan_load(o, e->gpu_, mo);
  e->model_ = K3Model::load(o.model_root, std::move(mo));
  e->tokenizer_ = load_tokenizer(o.model_root);
  const K3Config& cfg = e->model_->config();
  if (e->tokenizer_->vocab_size() > cfg.vocab)
    throw Error("the tokenizer has " + std::to_string(e->tokenizer_->vocab_size()) + " ids but the model only " +
                    std::to_string(cfg.vocab),
                "tokenizer files and weights are from different models");
  e->info_.backend = e->gpu_ ? "CUDA" : "CPU";
  e->info_.synth_preset = cfg.synth_preset;
  e->info_.expert_source = e->model_->experts().describe();
  return e;
}

Engine::~Engine() = default;

void Engine::set_drafter(const DraftOptions& draft) {
  drafts_.reset();  // the old drafter's memory is free before the new one loads
  opt_.draft = draft;
  drafts();
}

const DraftSetup& Engine::drafts() const {
  if (drafts_) return *drafts_;
  const DraftOptions& d = opt_.draft;
  DraftSetupOptions dso;
  try {
    dso.choice = parse_draft_choice(d.choice);
  } catch (const Error&) {
    if (!d.lenient) throw;
    dso.choice = DraftChoice::Auto;
  }
  dso.draft_root = d.model_root;
  dso.chat = d.chat;
  drafts_ = DraftSetup::create(*model_, dso);
  info_.drafter = drafts_->proposer() ? drafts_->proposer()->name() : std::string();
  info_.drafter_note = drafts_->note();
  return *drafts_;
}

std::unique_ptr<DraftProposer> Engine::new_proposer() const { return drafts().make_proposer(); }

std::unique_ptr<DecodeSession> Engine::open_session(int64_t max_context) {
  if (gpu_) {
    try {
      return make_cuda_session(*model_, max_context > 0 ? max_context : opt_.gpu_context, plan_ ? &*plan_ : nullptr);
    } catch (const std::exception& e) {
      if (!opt_.gpu_fallback) throw;
      // Too little GPU memory, a driver problem: the CPU computes, and the info says why.
      gpu_ = false;
      info_.backend = "CPU";
      info_.expert_source = model_->experts().describe();
      info_.gpu_error = e.what();
      info_.fallback_reason = "the GPU session did not start: " + info_.gpu_error;
    }
  }
  return std::make_unique<K3Session>(*model_);
}

std::function<std::unique_ptr<DecodeSession>(const K3Model&)> Engine::session_factory(int64_t max_context) const {
  if (gpu_) {
    const int64_t ctx = max_context > 0 ? max_context : opt_.gpu_context;
    const placement::Plan* plan = plan_ ? &*plan_ : nullptr;  // the engine outlives its factories
    return [ctx, plan](const K3Model& m) { return make_cuda_session(m, ctx, plan); };
  }
  return [](const K3Model& m) -> std::unique_ptr<DecodeSession> { return std::make_unique<K3Session>(m); };
}

std::vector<int32_t> Engine::chat_prompt(std::span<const ChatMessage> messages, const ChatOptions& options) const {
  return render_chat(*tokenizer_, messages, options);
}

std::vector<int32_t> Engine::text_prompt(const std::string& text) const {
  std::vector<int32_t> ids = tokenizer_->encode(text);
  const K3Config& cfg = model_->config();
  if (cfg.bos_token_id >= 0) ids.insert(ids.begin(), static_cast<int32_t>(cfg.bos_token_id));
  return ids;
}

std::vector<int32_t> Engine::text_stop_ids() const {
  std::vector<int32_t> ids;
  const K3Config& cfg = model_->config();
  if (cfg.eos_token_id >= 0) ids.push_back(static_cast<int32_t>(cfg.eos_token_id));
  if (auto e = tokenizer_->special_id("[EOS]")) ids.push_back(*e);
  return ids;
}

std::vector<int32_t> Engine::chat_stop_ids() const {
  std::vector<int32_t> ids{tokenizer_->require_special_id("<|end_of_msg|>")};
  if (auto e = tokenizer_->special_id("[EOS]")) ids.push_back(*e);
  return ids;
}

GenerateResult Engine::generate(DecodeSession& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                                const StreamOptions& stream) const {
  std::optional<ChatStreamParser> parser;
  std::optional<IncrementalDecoder> decoder;
  if (stream.chat) parser.emplace(*tokenizer_, stream.thinking);
  else decoder.emplace(*tokenizer_);
  auto emit = [&](std::vector<ChatEvent> events) {
    if (!events.empty() && stream.on_events) stream.on_events(events);
  };
  auto emit_text = [&](std::string text) {
    if (!text.empty()) emit({ChatEvent(ChatEvent::Kind::Answer, std::move(text))});
  };
  GenerateResult r = deltafin::generate(session, prompt, options, [&](int32_t id) {
    if (parser) emit(parser->push(id));
    else emit_text(decoder->push(id));
    const bool go = stream.on_token ? stream.on_token(id) : true;
    return go && !(parser && parser->done());
  });
  if (parser) emit(parser->finish());  // nothing once the end marker came
  else emit_text(decoder->finish());
  return r;
}

}  // namespace deltafin
