// The server's parts without HTTP: stop sequences, request validation, state snapshots (exact
// round trip through zstd), the disk and RAM state caches, the response memo and the FIFO queue.
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "runtime/k3_model.h"
#include "serve/api_error.h"
#include "serve/job_queue.h"
#include "serve/request_parser.h"
#include "serve/response_memo.h"
#include "serve/snapshot_store.h"
#include "serve/state_cache.h"
#include "serve/state_snapshot.h"
#include "serve/stop_matcher.h"
#include "support/test_support.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

using namespace deltafin;
using namespace deltafin::serve;
using nlohmann::json;
namespace fs = std::filesystem;

class TestServeUnits : public QObject {
  Q_OBJECT

  std::string tiny() { return test::fixtures_dir() + "/k3-tiny"; }
  std::unique_ptr<Tokenizer> tok_;
  ParseContext ctx_;

  // The param named by the ApiError `f` throws (or "<none>").
  template <class F>
  std::pair<int, std::string> refusal(F f) {
    try {
      f();
    } catch (const ApiError& e) {
      return {e.status(), e.param()};
    }
    return {0, "<none>"};
  }
  json chat_body() {
    return {{"model", "tiny"}, {"messages", json::array({{{"role", "user"}, {"content", "Hello there"}}})}};
  }

 private slots:
  void initTestCase() {
    tok_ = load_tokenizer(tiny());
    ctx_.tokenizer = tok_.get();
    ctx_.model_id = "tiny";
    ctx_.max_tokens_limit = 100;
    ctx_.context_limit = 200;
  }

  void stop_matcher_holds_back_split_sequences() {
    StopMatcher m({"END", "xyz"});
    QCOMPARE(m.push("hello E"), std::string("hello "));
    QCOMPARE(m.push("N"), std::string());
    QCOMPARE(m.push("Dafter"), std::string());
    QVERIFY(m.stopped());
    QCOMPARE(m.push("more"), std::string());
    StopMatcher n({"END"});
    QCOMPARE(n.push("a EN"), std::string("a "));
    QCOMPARE(n.push("X"), std::string("ENX"));
    QCOMPARE(n.push("EN"), std::string());
    QCOMPARE(n.finish(), std::string("EN"));
    QVERIFY(!n.stopped());
    StopMatcher none({});
    QCOMPARE(none.push("abc"), std::string("abc"));
  }

  void chat_request_renders_the_template() {
    const GenerationRequest r = parse_chat_request(chat_body(), ctx_);
    std::vector<ChatMessage> msgs = {{"user", "Hello there"}};
    QCOMPARE(r.prompt, render_chat(*tok_, msgs, ChatOptions{}));
    ChatOptions head;
    head.add_generation_prompt = false;
    QCOMPARE(r.turn_boundary, render_chat(*tok_, msgs, head).size());
    QVERIFY(r.thinking);
    QCOMPARE(r.max_tokens, 100);  // the server limit when not given
    json b = chat_body();
    b["reasoning_effort"] = "none";
    b["max_completion_tokens"] = 7;
    b["temperature"] = 0;
    const GenerationRequest p = parse_chat_request(b, ctx_);
    QVERIFY(!p.thinking);
    QCOMPARE(p.max_tokens, 7);
    QVERIFY(p.seeded);
  }

  void refused_fields_are_named() {
    auto chat_with = [&](const char* key, json v) {
      json b = chat_body();
      b[key] = v;
      return refusal([&] { parse_chat_request(b, ctx_); });
    };
    QCOMPARE(chat_with("tools", json::array({{{"type", "function"}}})),
             std::make_pair(400, std::string("tools[0].function")));
    QCOMPARE(chat_with("n", 2), std::make_pair(400, std::string("n")));
    QCOMPARE(chat_with("logprobs", 1), std::make_pair(400, std::string("logprobs")));
    QCOMPARE(chat_with("bogus", 1), std::make_pair(400, std::string("bogus")));
    QCOMPARE(chat_with("max_tokens", 101), std::make_pair(400, std::string("max_tokens")));
    QCOMPARE(chat_with("temperature", "hot"), std::make_pair(400, std::string("temperature")));
    QCOMPARE(chat_with("reasoning_effort", "medium"), std::make_pair(400, std::string("reasoning_effort")));
    QCOMPARE(chat_with("stream_options", json{{"include_usage", true}}),
             std::make_pair(400, std::string("stream_options")));
    QCOMPARE(chat_with("model", "other"), std::make_pair(404, std::string("model")));
    json img = chat_body();
    img["messages"][0]["content"] = json::array({{{"type", "image_url"}, {"image_url", {{"url", "x"}}}}});
    QCOMPARE(refusal([&] { parse_chat_request(img, ctx_); }),
             std::make_pair(400, std::string("messages[0].content[0].type")));
    json longp = chat_body();
    longp["messages"][0]["content"] = std::string(5000, 'a');
    QCOMPARE(refusal([&] { parse_chat_request(longp, ctx_); }).first, 400);
    // Defaults stay accepted: they mean "off".
    QCOMPARE(chat_with("presence_penalty", 0).first, 0);
    QCOMPARE(chat_with("tools", json::array()).first, 0);
  }

  void completion_prompts() {
    json b = {{"model", "tiny"}, {"prompt", json::array({1, 2, 3})}};
    const GenerationRequest r = parse_completion_request(b, ctx_);
    QCOMPARE(r.prompt, (std::vector<int32_t>{1, 2, 3}));
    QCOMPARE(r.max_tokens, 16);
    b["prompt"] = json::array({1, 5000});
    QCOMPARE(refusal([&] { parse_completion_request(b, ctx_); }), std::make_pair(400, std::string("prompt[1]")));
    b["prompt"] = json::array({"a", "b"});
    QCOMPARE(refusal([&] { parse_completion_request(b, ctx_); }), std::make_pair(400, std::string("prompt")));
    b["prompt"] = "text";
    const GenerationRequest t = parse_completion_request(b, ctx_);
    QCOMPARE(t.prompt.front(), *tok_->special_id("[BOS]"));
  }

  void json_bodies() {
    QCOMPARE(refusal([] { parse_json_body(std::string(100, '[')); }).first, 400);
    QCOMPARE(refusal([] { parse_json_body("{\"a\": \"\xff\"}"); }).first, 400);
    QCOMPARE(refusal([] { parse_json_body("[1]"); }).first, 400);
    QCOMPARE(refusal([] { parse_json_body("{\"a\": \"[[[[\"}"); }).first, 0);
  }

  void snapshot_round_trip_is_exact() {
    auto model = K3Model::load(tiny());
    K3Session a(*model);
    std::vector<int32_t> ids;
    for (int i = 0; i < 20; ++i) ids.push_back((i * 37) % 700 + 1);
    a.prefill(std::span<const int32_t>(ids.data(), 19));
    const std::string dir = test::temp_dir("snap");
    const std::string path = dir + "/s.dfsnap";
    write_state_snapshot(path, 42, std::span<const int32_t>(ids.data(), 19), a.save_state());
    SnapshotHeader h;
    QVERIFY(read_snapshot_header(path, h));
    QCOMPARE(h.model_fingerprint, uint64_t(42));
    QCOMPARE(h.ids.size(), size_t(19));
    K3Session b(*model);
    b.load_state(read_state_snapshot(path, model->config(), h));
    QCOMPARE(b.n_past(), int64_t(19));
    std::vector<float> la, lb;
    const int32_t last[1] = {ids[19]};
    a.stage(last, la);
    b.stage(last, lb);
    QCOMPARE(la.size(), lb.size());
    QVERIFY(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
    // A damaged file is refused, never imported.
    fs::resize_file(path, fs::file_size(path) - 40);
    bool threw = false;
    try {
      read_state_snapshot(path, model->config(), h);
    } catch (const Error&) {
      threw = true;
    }
    QVERIFY(threw);
    a.rollback();  // a state is saved between passes only
    K3State wrong = a.save_state();
    wrong.n_past += 1;  // the MLA caches no longer match it
    threw = false;
    try {
      b.load_state(wrong);
    } catch (const Error&) {
      threw = true;
    }
    QVERIFY(threw);
  }

  void snapshot_store_is_bounded_and_reindexed() {
    auto model = K3Model::load(tiny());
    K3Session s(*model);
    std::vector<int32_t> ids(30);
    for (int i = 0; i < 30; ++i) ids[i] = 10 + i;
    const std::string dir = test::temp_dir("store");
    uint64_t one = 0;
    {
      SnapshotStore store(dir, 7, uint64_t(1) << 40);
      s.prefill(std::span<const int32_t>(ids.data(), 10));
      store.save(std::span<const int32_t>(ids.data(), 10), s.save_state());
      one = store.bytes();
      QVERIFY(one > 0);
      s.prefill(std::span<const int32_t>(ids.data() + 10, 10));
      store.save(std::span<const int32_t>(ids.data(), 20), s.save_state());
      QCOMPARE(store.count(), size_t(2));
      QCOMPARE(store.best_prefix(ids, 29), size_t(20));
      QCOMPARE(store.best_prefix(ids, 19), size_t(10));
      std::vector<int32_t> other = ids;
      other[3] = 999;
      QCOMPARE(store.best_prefix(other, 29), size_t(0));
    }
    // A new store (a restarted server) finds them; a smaller budget evicts the oldest.
    SnapshotStore again(dir, 7, uint64_t(1) << 40);
    QCOMPARE(again.count(), size_t(2));
    auto st = again.load(ids, 20, model->config());
    QVERIFY(st.has_value());
    QCOMPARE(st->n_past, int64_t(20));
    SnapshotStore small(dir, 7, again.bytes() - 1);
    QCOMPARE(small.count(), size_t(1));
    SnapshotStore foreign(dir, 8, uint64_t(1) << 40);
    QCOMPARE(foreign.count(), size_t(0));
    // A snapshot of the earlier fp32 format is deleted when the folder is indexed; a file that is
    // not a snapshot is left alone.
    const std::string old = dir + "/old.dfsnap", other = dir + "/notes.dfsnap";
    {
      std::FILE* f = std::fopen(old.c_str(), "wb");
      std::fwrite("DFSNAP01", 1, 8, f);
      std::fclose(f);
      f = std::fopen(other.c_str(), "wb");
      std::fwrite("not ours", 1, 8, f);
      std::fclose(f);
    }
    SnapshotStore reindexed(dir, 7, uint64_t(1) << 40);
    QVERIFY(!std::filesystem::exists(old));
    QVERIFY(std::filesystem::exists(other));
  }

  void state_cache_and_memo_are_bounded() {
    K3State st;
    st.kda.resize(1);
    st.mla.resize(1);
    st.kda[0].S.assign(500, 1.0);  // 4000 bytes
    StateCache c(10000);
    const std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6};
    c.put(std::span<const int32_t>(ids.data(), 2), st);
    c.put(std::span<const int32_t>(ids.data(), 4), st);
    QCOMPARE(c.best_prefix(ids, 5), size_t(4));
    QCOMPARE(c.best_prefix(ids, 3), size_t(2));
    c.put(std::span<const int32_t>(ids.data(), 5), st);
    QCOMPARE(c.count(), size_t(2));  // 3 x 4000 bytes > 10000: the oldest went
    QCOMPARE(c.best_prefix(ids, 3), size_t(0));
    QVERIFY(c.get(ids, 4).has_value());

    ResponseMemo m(2, 1 << 20);
    m.put("a", MemoAnswer{"", "A", {}, "stop", 1, 0});
    m.put("b", MemoAnswer{"", "B", {}, "stop", 1, 0});
    QVERIFY(m.find("a").has_value());
    m.put("c", MemoAnswer{"", "C", {}, "stop", 1, 0});
    QVERIFY(!m.find("b").has_value());  // least recently used
    QCOMPARE(m.find("a")->content, std::string("A"));
  }

  void job_queue_is_fifo_and_bounded() {
    JobQueue q(2);
    auto j1 = std::make_shared<Job>(GenerationRequest{});
    auto j2 = std::make_shared<Job>(GenerationRequest{});
    auto j3 = std::make_shared<Job>(GenerationRequest{});
    QVERIFY(q.push(j1));
    QVERIFY(q.push(j2));
    QVERIFY(!q.push(j3));
    QVERIFY(q.remove(j1));
    QVERIFY(q.push(j3));
    QCOMPARE(q.pop(), j2);
    QCOMPARE(q.pop(), j3);
    QVERIFY(j2->seq < j3->seq);
    q.shutdown();
    QCOMPARE(q.pop(), std::shared_ptr<Job>());
  }
};

QTEST_GUILESS_MAIN(TestServeUnits)
#include "test_serve_units.moc"
