#include "local_engine_worker.h"

#include <QFileInfo>

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "chat_turns.h"
#include "deltafin/engine.h"
#include "device_choice.h"
#include "tier_shares.h"
#include "runtime/k3_model.h"
#include "tokenizer/tokenizer.h"

namespace deltafin::gui {
namespace {

using Clock = std::chrono::steady_clock;

// Host-tier counters, and on a GPU session its VRAM tier in front of them: there the lookups are
// the VRAM tier's (its misses are the host tier's lookups), and with every expert resident each
// lookup is served from VRAM (the host counters then only hold the preload).
CacheCounters toCounters(const ExpertCounters& c, const DecodeSession* s = nullptr) {
  CacheCounters out;
  out.requests = c.requests;
  out.ramHits = c.ram_hits;
  out.diskReads = c.disk_reads;
  out.netFetches = c.net_fetches;
  if (const auto v = s ? s->vram_tier() : std::nullopt) {
    out.hasVram = true;
    out.requests = v->all_resident ? c.requests : v->requests;
    out.vramHits = v->all_resident ? c.requests : v->hits;
  }
  return out;
}

// A prompt for benchmarks: real text, tokenized, repeated to the requested length.
std::vector<int32_t> benchPrompt(const Tokenizer& tok, int length) {
  static const char* kText =
      "The quick brown fox jumps over the lazy dog. Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter "
      "Deich. 敏捷的棕色狐狸跳过了懒狗。 for (int i = 0; i < n; ++i) sum += a[i] * b[i];\n";
  const std::vector<int32_t> text = tok.encode(kText);
  std::vector<int32_t> ids;
  if (auto bos = tok.special_id("[BOS]")) ids.push_back(*bos);
  while (static_cast<int>(ids.size()) < length) ids.insert(ids.end(), text.begin(), text.end());
  ids.resize(static_cast<size_t>(std::max(1, length)));
  return ids;
}

}  // namespace

LocalEngineWorker::LocalEngineWorker() = default;
LocalEngineWorker::~LocalEngineWorker() = default;

void LocalEngineWorker::load(const QString& modelRoot, bool isDemo, const EngineOptions& options) {
  session_.reset();
  engine_.reset();
  try {
    deltafin::EngineOptions eo;
    eo.model_root = modelRoot.toStdString();
    if (options.ramCache) {
      // Stream installs keep their own capped cache; these options apply to full installs.
      StoreOptions so;
      so.ram_budget = options.ramBudgetBytes;
      so.policy = parse_policy(options.policy.toStdString());
      so.direct_io = options.directIo;
      eo.store = so;
    }
    // The device is resolved here, not by the engine, so the reasons are in the app's language.
    const DeviceChoice device = resolveDevice(options.device);
    eo.device = device.name == QLatin1String("CUDA") ? "cuda" : "cpu";
    eo.gpu_fallback = true;
    eo.gpu_context = kGpuContextTokens;
    eo.draft.choice = options.drafter.toStdString();
    eo.draft.lenient = true;  // an unknown name (an old settings file) falls back to the engine's own choice
    eo.draft.chat = true;     // the app sends chat prompts: auto prefers DSpark, the drafter made for them
    // Emitted on this thread, delivered queued: loading real K3's spine takes tens of seconds.
    eo.say = [this](const std::string& note) { emit loadNote(QString::fromStdString(note).trimmed()); };
    engine_ = Engine::load(std::move(eo));
    session_ = engine_->open_session();  // before the drafter: the GPU session gets the memory first
    info_ = BackendInfo{};
    info_.name = QString::fromStdString(engine_->info().backend);
    info_.fallbackReason = device.reason;
    if (!engine_->info().gpu_error.empty())
      // Too little GPU memory, a driver problem: the CPU computes, and the status bar says why.
      info_.fallbackReason =
          tr("the GPU session did not start: %1").arg(QString::fromStdString(engine_->info().gpu_error));
    info_.modelRoot = modelRoot;
    info_.modelName = QFileInfo(modelRoot).fileName();
    info_.isDemo = isDemo;
    info_.expertSource = QString::fromStdString(engine_->model().experts().describe());
    describeDrafter(options.drafter);
    emit loaded(info_);
    emitCounters();
  } catch (const Error& e) {
    session_.reset();
    engine_.reset();
    emit loadFailed(QString::fromStdString(e.what_failed()), QString::fromStdString(e.what_to_do()));
  } catch (const std::exception& e) {
    session_.reset();
    engine_.reset();
    emit loadFailed(QString::fromStdString(e.what()), tr("check the model folder in Settings"));
  }
}

void LocalEngineWorker::describeDrafter(const QString& drafter) {
  engine_->drafts();  // loads it (after the session: the GPU session gets the memory first)
  info_.drafter = QString::fromStdString(engine_->info().drafter);
  info_.drafterNote = QString::fromStdString(engine_->info().drafter_note);
  if (drafter == QLatin1String("off")) info_.drafterNote = tr("off in Settings");
}

void LocalEngineWorker::setDrafter(const QString& drafter) {
  if (!engine_) return;
  try {
    DraftOptions d = engine_->options().draft;
    d.choice = drafter.toStdString();
    engine_->set_drafter(d);
    describeDrafter(drafter);
    emit loaded(info_);
  } catch (const Error& e) {
    emit loadFailed(QString::fromStdString(e.what_failed()), QString::fromStdString(e.what_to_do()));
  } catch (const std::exception& e) {
    emit loadFailed(QString::fromStdString(e.what()), QString());
  }
}

void LocalEngineWorker::generate(const GenerationRequest& request) {
  if (!engine_) {
    emit failed(request.id, tr("no model is loaded"), tr("run the setup wizard or choose a model folder in Settings"));
    return;
  }
  try {
    const std::vector<ChatMessage> messages = engineMessages(request.turns);
    ChatOptions chat;
    chat.thinking = request.thinking;
    if (const auto effort = parse_reasoning_effort(request.effort.toStdString()); effort && request.thinking)
      chat.effort = *effort;
    const std::vector<int32_t> prompt = engine_->chat_prompt(messages, chat);

    GenerateOptions opts;
    opts.max_new = request.maxNewTokens;
    opts.sampling.temperature = static_cast<float>(request.temperature);
    opts.sampling.top_p = static_cast<float>(request.topP);
    opts.sampling.seed = request.seed;
    opts.stop_ids = engine_->chat_stop_ids();

    QString pendingReasoning, pendingAnswer;
    QList<ToolCallInfo> calls;  // sent after the text, as the model writes them after its answer
    auto lastEmit = Clock::now();
    const auto started = Clock::now();
    auto lastSnapshot = started - kSnapshotInterval;  // the first token reports at once
    bool sawFirst = false;
    double firstTokenSeconds = 0;
    auto flush = [&] {
      if (pendingReasoning.isEmpty() && pendingAnswer.isEmpty()) return;
      emit chunk(request.id, pendingReasoning, pendingAnswer);
      pendingReasoning.clear();
      pendingAnswer.clear();
      lastEmit = Clock::now();
    };
    StreamOptions stream;
    stream.chat = true;
    stream.thinking = request.thinking;
    stream.on_events = [&](const std::vector<ChatEvent>& events) {
      for (const ChatEvent& ev : events) {
        if (ev.kind == ChatEvent::Kind::Answer) pendingAnswer += QString::fromStdString(ev.text);
        else if (ev.kind == ChatEvent::Kind::Reasoning) pendingReasoning += QString::fromStdString(ev.text);
        else if (ev.kind == ChatEvent::Kind::ToolCall) calls.push_back(toolCallFromEvent(ev));
      }
    };
    stream.on_token = [&](int32_t) {
      if (!sawFirst) {
        sawFirst = true;
        firstTokenSeconds = std::chrono::duration<double>(Clock::now() - started).count();
      }
      if (Clock::now() - lastEmit >= kChunkInterval) flush();
      // Between tokens nothing is in flight: the tier map sees the tiers as this token left them.
      if (liveSnapshots_.load() && Clock::now() - lastSnapshot >= kSnapshotInterval) {
        emitSnapshot();
        emitCounters();
        lastSnapshot = Clock::now();
      }
      return !stop_.load();
    };

    // A fresh proposer per reply: it follows this session's tokens from the start.
    const std::unique_ptr<DraftProposer> proposer = engine_->new_proposer();
    opts.drafter = proposer.get();
    session_->reset();
    const GenerateResult result = engine_->generate(*session_, prompt, opts, stream);
    flush();
    for (const ToolCallInfo& call : calls) emit toolCall(request.id, call);

    GenerationStats stats;
    stats.promptTokens = result.stats.prompt_tokens;
    stats.newTokens = result.stats.new_tokens;
    stats.firstTokenSeconds = firstTokenSeconds;
    stats.decodeTokensPerSecond = result.stats.decode_tokens_per_second();
    stats.prefillTokensPerSecond =
        result.stats.prefill_seconds > 0 ? result.stats.prompt_tokens / result.stats.prefill_seconds : 0;
    stats.totalSeconds = std::chrono::duration<double>(Clock::now() - started).count();
    stats.stoppedByUser = stop_.load();
    stats.drafter = QString::fromStdString(result.stats.drafter);
    stats.proposed = result.stats.proposed;
    stats.accepted = result.stats.accepted;
    stats.draftFallback = QString::fromStdString(result.stats.draft_fallback);
    emitCounters();
    emit finished(request.id, stats);
  } catch (const Error& e) {
    emit failed(request.id, QString::fromStdString(e.what_failed()), QString::fromStdString(e.what_to_do()));
  } catch (const std::exception& e) {
    emit failed(request.id, QString::fromStdString(e.what()), QString());
  }
}

void LocalEngineWorker::runBench(const BenchArm& arm) {
  if (!engine_) {
    emit benchFailed(arm.name, tr("no model is loaded"),
                     tr("run the setup wizard or choose a model folder in Settings"));
    return;
  }
  try {
    const std::vector<int32_t> prompt = benchPrompt(engine_->tokenizer(), arm.promptTokens);
    struct Run {
      double prefill, decode, ttft;
      ExpertCounters delta;
      uint64_t bytes;
    };
    std::vector<Run> runs;
    const int repeats = std::max(1, arm.repeats);
    for (int i = 0; i < repeats && !stop_.load(); ++i) {
      emit benchProgress(arm.name, i + 1, repeats);
      const ExpertCounters before = engine_->model().experts().counters();
      session_->reset();
      GenerateOptions opts;
      opts.max_new = std::max(1, arm.newTokens);
      const GenerateResult r = deltafin::generate(*session_, prompt, opts, [&](int32_t) { return !stop_.load(); });
      const ExpertCounters after = engine_->model().experts().counters();
      Run run{};
      run.prefill = r.stats.prefill_seconds > 0 ? r.stats.prompt_tokens / r.stats.prefill_seconds : 0;
      run.decode = r.stats.decode_tokens_per_second();
      run.ttft = r.stats.first_token_seconds;
      run.delta = after - before;
      run.bytes = r.stats.expert_bytes;
      runs.push_back(run);
    }
    session_->reset();
    emitCounters();
    if (stop_.load()) {
      emit benchFailed(arm.name, tr("the benchmark was stopped"), QString());
      return;
    }
    // The median run by decode speed, so one disturbed run does not move the result.
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.decode < b.decode; });
    const Run& m = runs[runs.size() / 2];
    BenchResult res;
    res.arm = arm.name;
    res.model = info_.modelName;
    res.backend = info_.name;
    res.when = QDateTime::currentDateTime();
    res.promptTokens = static_cast<int>(prompt.size());
    res.newTokens = arm.newTokens;
    res.repeats = repeats;
    res.prefillTokensPerSecond = m.prefill;
    res.decodeTokensPerSecond = m.decode;
    res.firstTokenSeconds = m.ttft;
    const TierShares tiers = tierShares(toCounters(m.delta));
    res.ramHitRate = tiers.share(tiers.ram);
    res.diskReadRate = tiers.share(tiers.disk);
    res.netFetchRate = tiers.share(tiers.network);
    res.expertBytes = m.bytes;
    emit benchResult(res);
  } catch (const Error& e) {
    emit benchFailed(arm.name, QString::fromStdString(e.what_failed()), QString::fromStdString(e.what_to_do()));
  } catch (const std::exception& e) {
    emit benchFailed(arm.name, QString::fromStdString(e.what()), QString());
  }
}

void LocalEngineWorker::inspectCache() {
  if (!engine_) {
    emit cacheActionFailed(tr("no model is loaded"), tr("run the setup wizard or choose a model folder in Settings"));
    return;
  }
  emitSnapshot();
}

void LocalEngineWorker::emitSnapshot() {
  const auto vram = session_ ? session_->vram_tier() : std::nullopt;
  emit cacheSnapshot(snapshotCache(engine_->model().experts(), engine_->model().config().layers,
                                   engine_->model().config().experts, vram ? &*vram : nullptr));
}

void LocalEngineWorker::warmCacheLayer(int layer) {
  if (!engine_) return;
  try {
    warmLayer(engine_->model().experts(), layer, engine_->model().config().experts);
    emit cacheActionDone(tr("Layer %1 is cached").arg(layer));
  } catch (const Error& e) {
    emit cacheActionFailed(QString::fromStdString(e.what_failed()), QString::fromStdString(e.what_to_do()));
  } catch (const std::exception& e) {
    emit cacheActionFailed(QString::fromStdString(e.what()), QString());
  }
  emitCounters();
  inspectCache();
}

void LocalEngineWorker::evictCache(quint64 targetBytes) {
  if (!engine_) return;
  try {
    const quint64 freed = evictTo(engine_->model().experts(), targetBytes);
    emit cacheActionDone(tr("Freed %1 bytes").arg(freed));
  } catch (const Error& e) {
    emit cacheActionFailed(QString::fromStdString(e.what_failed()), QString::fromStdString(e.what_to_do()));
  }
  inspectCache();
}

void LocalEngineWorker::emitCounters() {
  if (engine_) emit countersChanged(toCounters(engine_->model().experts().counters(), session_.get()));
}

}  // namespace deltafin::gui
