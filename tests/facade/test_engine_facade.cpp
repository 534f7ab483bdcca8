// deltafin::Engine (engine/include/deltafin): loading, device choice, prompts, the drafter and the
// streamed turn, on the k3-tiny fixture. The ids come from runtime's generate(); what the facade
// adds is checked against it: the streamed text is the text of the ids, cancelling stops the turn.
#include <QtTest>

#include <string>
#include <vector>

#include "base/error.h"
#include "deltafin/backend.h"
#include "deltafin/engine.h"
#include "runtime/k3_model.h"
#include "runtime/spine_streamer.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

using namespace deltafin;

class TestEngineFacade : public QObject {
  Q_OBJECT

  static EngineOptions tiny() {
    EngineOptions o;
    o.model_root = test::fixtures_dir() + "/k3-tiny";
    return o;
  }

 private slots:
  void streamedTextIsTheTextOfTheIds() {
    auto e = Engine::load(tiny());
    QCOMPARE(e->info().backend, std::string("CPU"));
    QVERIFY(!e->on_gpu());
    auto session = e->open_session();
    const std::vector<int32_t> prompt = e->text_prompt("hello there");
    GenerateOptions g;
    g.max_new = 12;
    g.stop_ids = e->text_stop_ids();
    std::string streamed;
    std::vector<int32_t> seen;
    StreamOptions so;
    so.on_events = [&](const std::vector<ChatEvent>& events) {
      for (const ChatEvent& ev : events) {
        QCOMPARE(int(ev.kind), int(ChatEvent::Kind::Answer));  // raw text: answer events only
        streamed += ev.text;
      }
    };
    so.on_token = [&](int32_t id) {
      seen.push_back(id);
      return true;
    };
    const GenerateResult r = e->generate(*session, prompt, g, so);
    QVERIFY(!seen.empty());
    IncrementalDecoder decoder(e->tokenizer());
    const std::string expected = decoder.push(std::span<const int32_t>(seen)) + decoder.finish();
    QCOMPARE(streamed, expected);

    // The same ids as runtime's generate() on a session of its own: the facade only reads them.
    K3Session plain(e->model());
    const GenerateResult direct = deltafin::generate(plain, prompt, g);
    QCOMPARE(r.ids, direct.ids);
  }

  void cpuSpinePlacedByAFreeMemoryPlan() {
    // Without budgets the CPU engine owns its spine as a plan under free memory places it (k3-tiny
    // fits any machine that runs the tests); map_spine leaves it mapped. Same ids either way.
    auto owned = Engine::load(tiny());
    QVERIFY(owned->model().spine() != nullptr);
    QVERIFY(owned->model().spine()->owned_bytes() > 0);
    QVERIFY(!owned->plan());  // its rates were assumed: nothing to report
    EngineOptions mo = tiny();
    mo.placement.map_spine = true;
    auto mapped = Engine::load(mo);
    QVERIFY(mapped->model().spine() == nullptr);
    GenerateOptions g;
    g.max_new = 10;
    const std::vector<int32_t> prompt = owned->text_prompt("where the spine lives");
    auto a = owned->open_session();
    auto b = mapped->open_session();
    const GenerateResult ra = deltafin::generate(*a, prompt, g), rb = deltafin::generate(*b, prompt, g);
    QCOMPARE(int(ra.ids.size()), 10);
    QCOMPARE(ra.ids, rb.ids);
  }

  void onTokenFalseStopsTheTurn() {
    auto e = Engine::load(tiny());
    auto session = e->open_session();
    GenerateOptions g;
    g.max_new = 20;
    int count = 0;
    StreamOptions so;
    so.on_token = [&](int32_t) { return ++count < 3; };
    const GenerateResult r = e->generate(*session, e->text_prompt("hello"), g, so);
    QCOMPARE(count, 3);
    QCOMPARE(int(r.ids.size()), 3);
    QVERIFY(r.stopped_by_callback);
  }

  void textPromptStartsWithTheModelsBos() {
    auto e = Engine::load(tiny());
    const std::vector<int32_t> ids = e->text_prompt("hello");
    const int64_t bos = e->model().config().bos_token_id;
    if (bos < 0) QSKIP("k3-tiny has no BOS");
    QCOMPARE(int64_t(ids.front()), bos);
    QCOMPARE(ids.size(), e->tokenizer().encode("hello").size() + 1);
  }

  void devices() {
    EngineOptions o = tiny();
    o.device = "gpu";
    QVERIFY_THROWS_EXCEPTION(Error, Engine::load(o));
    if (cuda_backend_built()) QSKIP("the rest is about a build without the CUDA backend");
    o.device = "cuda";
    try {
      Engine::load(o);
      QFAIL("cuda loaded in a build without the CUDA backend");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("built without the CUDA backend") != std::string::npos, e.what());
    }
    o.device = "auto";
    auto e = Engine::load(o);
    QCOMPARE(e->info().backend, std::string("CPU"));
    QCOMPARE(e->info().fallback_reason, std::string("this build has no CUDA support"));
    QCOMPARE(int(probe_cuda().status), int(CudaProbe::Status::NotBuilt));
  }

  void drafterChoice() {
    EngineOptions o = tiny();
    o.draft.choice = "bogus";
    auto e = Engine::load(o);  // the drafter loads on first use
    QVERIFY_THROWS_EXCEPTION(Error, e->drafts());
    DraftOptions lenient = o.draft;
    lenient.lenient = true;  // an old settings file: auto instead
    e->set_drafter(lenient);
    DraftOptions ngram;
    ngram.choice = "ngram";
    e->set_drafter(ngram);
    QCOMPARE(e->info().drafter.empty(), e->new_proposer() == nullptr);
    DraftOptions off;
    off.choice = "off";
    e->set_drafter(off);
    QVERIFY(e->new_proposer() == nullptr);
    QVERIFY(e->info().drafter.empty());
  }
};

QTEST_GUILESS_MAIN(TestEngineFacade)
#include "test_engine_facade.moc"
