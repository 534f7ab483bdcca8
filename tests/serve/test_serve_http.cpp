// `deltafin serve` end to end over raw HTTP on the demo model: routes, JSON and SSE shapes, exact
// seeded sampling, stop sequences, OpenAI-shaped refusals, the API key, loopback-only binding,
// client disconnects, prefix reuse, the memo and disk snapshots. The 429 queue and the time
// limits are tested on a scripted engine (test_serve_scripted.cpp), which no clock can race.
#include <QtTest/QtTest>

#include <atomic>
#include <chrono>
#include <thread>

#include "serve_test_support.h"
#include "support/test_support.h"

using namespace deltafin::test;
using nlohmann::json;

namespace {

json chat(const std::string& user, int max_tokens, const char* effort = "none") {
  json b = {{"model", "demo-model"},
            {"messages", json::array({{{"role", "user"}, {"content", user}}})},
            {"max_tokens", max_tokens},
            {"temperature", 0}};
  if (effort) b["reasoning_effort"] = effort;
  return b;
}

bool openai_error_shape(const HttpReply& r) {
  const json j = r.json();
  return j.is_object() && j.contains("error") && j["error"].contains("message") && j["error"]["message"].is_string() &&
         j["error"].contains("type") && j["error"].contains("param") && j["error"].contains("code");
}

// The concatenated content / text of an SSE stream, and its JSON events.
struct Streamed {
  std::string content, reasoning, finish;
  std::vector<json> events;
  bool done = false;
};
Streamed read_stream(const HttpReply& r, bool chat) {
  Streamed s;
  for (const std::string& d : r.sse_data()) {
    if (d == "[DONE]") {
      s.done = true;
      continue;
    }
    json j = json::parse(d, nullptr, false);
    s.events.push_back(j);
    if (!j.contains("choices")) continue;
    for (const json& c : j["choices"]) {
      if (chat) {
        if (c["delta"].contains("content") && c["delta"]["content"].is_string())
          s.content += c["delta"]["content"].get<std::string>();
        if (c["delta"].contains("reasoning_content")) s.reasoning += c["delta"]["reasoning_content"].get<std::string>();
      } else {
        s.content += c["text"].get<std::string>();
      }
      if (c["finish_reason"].is_string()) s.finish = c["finish_reason"];
    }
  }
  return s;
}

json health(int port) { return http_request(port, "GET", "/health").json(); }

}  // namespace

class TestServeHttp : public QObject {
  Q_OBJECT
  std::unique_ptr<ServerProcess> srv_;
  int port_ = 0;

  std::vector<std::string> base_args() { return {"--model-root", demo_model_dir(), "--no-snapshots"}; }

 private slots:
  void initTestCase() {
    srv_ = std::make_unique<ServerProcess>(base_args());
    QVERIFY2(srv_->ok(), srv_->output().c_str());
    port_ = srv_->port();
  }

  void models_and_health() {
    for (const char* path : {"/v1/models", "/models"}) {
      const HttpReply r = http_request(port_, "GET", path);
      QCOMPARE(r.status, 200);
      QCOMPARE(r.json()["object"], json("list"));
      QCOMPARE(r.json()["data"][0]["id"], json("demo-model"));
    }
    QCOMPARE(http_request(port_, "GET", "/v1/models/demo-model").json()["id"], json("demo-model"));
    QCOMPARE(http_request(port_, "GET", "/v1/models/other").status, 404);
    QCOMPARE(health(port_)["status"], json("ok"));
  }

  void chat_json_and_stream_agree() {
    const HttpReply plain = post_json(port_, "/v1/chat/completions", chat("Name a colour.", 16));
    QCOMPARE(plain.status, 200);
    const json j = plain.json();
    QCOMPARE(j["object"], json("chat.completion"));
    QCOMPARE(j["choices"][0]["message"]["role"], json("assistant"));
    const std::string content = j["choices"][0]["message"]["content"];
    const std::string finish = j["choices"][0]["finish_reason"];
    QVERIFY(finish == "stop" || finish == "length");
    const int completion = j["usage"]["completion_tokens"];
    if (finish == "length") QCOMPARE(completion, 16);
    QCOMPARE(j["usage"]["total_tokens"].get<int>(), j["usage"]["prompt_tokens"].get<int>() + completion);

    json sb = chat("Name a colour.", 16);
    sb["stream"] = true;
    sb["stream_options"] = {{"include_usage", true}};
    const HttpReply st = post_json(port_, "/chat/completions", sb);  // also without /v1
    QCOMPARE(st.status, 200);
    QVERIFY(st.headers.at("content-type").find("text/event-stream") == 0);
    const Streamed s = read_stream(st, true);
    QVERIFY(s.done);
    QCOMPARE(s.content, content);
    QCOMPARE(s.finish, finish);
    QCOMPARE(s.events.front()["choices"][0]["delta"]["role"], json("assistant"));
    const json last = s.events.back();
    QVERIFY(last["choices"].empty());
    QCOMPARE(last["usage"]["completion_tokens"].get<int>(), completion);
    for (size_t i = 0; i + 1 < s.events.size(); ++i) {
      QCOMPARE(s.events[i]["object"], json("chat.completion.chunk"));
      QVERIFY(s.events[i]["usage"].is_null());
    }
  }

  void reasoning_is_returned_separately() {
    const HttpReply r = post_json(port_, "/v1/chat/completions", chat("Think first.", 12, "high"));
    QCOMPARE(r.status, 200);
    const json j = r.json();
    // With high effort the demo model opens its answer with a think block: reasoning comes first.
    QVERIFY(j["choices"][0]["message"].contains("reasoning_content"));
    QVERIFY(!j["choices"][0]["message"]["reasoning_content"].get<std::string>().empty());
    QVERIFY(j["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>() > 0);
    json sb = chat("Think first.", 12, "high");
    sb["stream"] = true;
    const Streamed s = read_stream(post_json(port_, "/v1/chat/completions", sb), true);
    QCOMPARE(s.reasoning, j["choices"][0]["message"]["reasoning_content"].get<std::string>());
    QCOMPARE(s.content, j["choices"][0]["message"]["content"].get<std::string>());
  }

  void seeded_sampling_is_exact_and_memoized() {
    ServerProcess nomemo([&] {
      auto a = base_args();
      a.insert(a.end(), {"--memo-entries", "0"});
      return a;
    }());
    QVERIFY2(nomemo.ok(), nomemo.output().c_str());
    json b = {{"model", "demo-model"},
              {"prompt", "Once upon a time"},
              {"max_tokens", 20},
              {"temperature", 0.9},
              {"seed", 1234}};
    const HttpReply a1 = post_json(nomemo.port(), "/v1/completions", b);
    const HttpReply a2 = post_json(nomemo.port(), "/v1/completions", b);
    QCOMPARE(a1.status, 200);
    QCOMPARE(a1.headers.at("x-deltafin-reuse") == "memo", false);
    QCOMPARE(a1.json()["choices"][0]["text"], a2.json()["choices"][0]["text"]);
    b["stream"] = true;
    QCOMPARE(read_stream(post_json(nomemo.port(), "/v1/completions", b), false).content,
             a1.json()["choices"][0]["text"].get<std::string>());
    b.erase("stream");
    b["seed"] = 99;
    const HttpReply other = post_json(nomemo.port(), "/v1/completions", b);
    QVERIFY(other.json()["choices"][0]["text"] != a1.json()["choices"][0]["text"]);

    // The memo answers a repeat without running the model, with the same text.
    b["seed"] = 1234;
    const HttpReply m1 = post_json(port_, "/v1/completions", b);
    const HttpReply m2 = post_json(port_, "/v1/completions", b);
    QCOMPARE(m2.headers.at("x-deltafin-reuse"), std::string("memo"));
    QCOMPARE(m2.headers.at("x-deltafin-prefilled"), std::string("0"));
    QCOMPARE(m1.json()["choices"][0]["text"], a1.json()["choices"][0]["text"]);
    QCOMPARE(m2.json()["choices"][0]["text"], a1.json()["choices"][0]["text"]);
  }

  void stop_sequences_cut_the_text() {
    json b = {{"model", "demo-model"}, {"prompt", "The list:"}, {"max_tokens", 24}, {"temperature", 0}};
    const std::string full = post_json(port_, "/v1/completions", b).json()["choices"][0]["text"];
    QVERIFY(full.size() > 8);
    // A stop sequence taken from the middle of the greedy text.
    size_t at = full.size() / 2, len = 1;
    while (at < full.size() && (static_cast<unsigned char>(full[at]) & 0xC0) == 0x80) ++at;
    while (at + len < full.size() && (static_cast<unsigned char>(full[at + len]) & 0xC0) == 0x80) ++len;
    const std::string stop = full.substr(at, len);
    const std::string expected = full.substr(0, full.find(stop));
    b["stop"] = json::array({stop, "never-appears-here"});
    const json j = post_json(port_, "/v1/completions", b).json();
    QCOMPARE(j["choices"][0]["text"].get<std::string>(), expected);
    QCOMPARE(j["choices"][0]["finish_reason"], json("stop"));
    b["stream"] = true;
    const Streamed s = read_stream(post_json(port_, "/v1/completions", b), false);
    QCOMPARE(s.content, expected);
    QCOMPARE(s.finish, std::string("stop"));
  }

  void refusals_are_openai_shaped() {
    struct Case {
      json body;
      int status;
      std::string param;
    };
    std::vector<Case> cases;
    auto with = [&](const char* k, json v, int status, std::string param) {
      json b = chat("hi", 4);
      b[k] = v;
      cases.push_back({b, status, param});
    };
    with("tool_choice", {{"type", "function"}, {"function", {{"name", "f"}}}}, 400, "tool_choice");
    with("n", 3, 400, "n");
    with("top_logprobs", 2, 400, "top_logprobs");
    with("response_format", {{"type", "xml"}}, 400, "response_format.type");
    with("frobnicate", true, 400, "frobnicate");
    with("model", "gpt-4", 404, "model");
    with("max_tokens", 100000000, 400, "max_tokens");
    json img = chat("hi", 4);
    img["messages"][0]["content"] = json::array({{{"type", "image_url"}, {"image_url", {{"url", "data:,"}}}}});
    cases.push_back({img, 400, "messages[0].content[0].type"});
    for (const Case& c : cases) {
      const HttpReply r = post_json(port_, "/v1/chat/completions", c.body);
      QCOMPARE(r.status, c.status);
      QVERIFY2(openai_error_shape(r), r.body.c_str());
      QCOMPARE(r.json()["error"]["param"], json(c.param));
    }
    QCOMPARE(http_request(port_, "GET", "/v1/chat/completions").status, 405);
    const HttpReply nf = http_request(port_, "GET", "/v1/nothing");
    QCOMPARE(nf.status, 404);
    QVERIFY(openai_error_shape(nf));
    const HttpReply big = http_request(port_, "POST", "/v1/completions", std::string(5 << 20, ' '));
    QCOMPARE(big.status, 413);
    QVERIFY(openai_error_shape(big));
  }

  void api_key_guards_every_route_but_health() {
    ServerProcess keyed([&] {
      auto a = base_args();
      a.insert(a.end(), {"--api-key", "s3cret"});
      return a;
    }());
    QVERIFY2(keyed.ok(), keyed.output().c_str());
    QCOMPARE(http_request(keyed.port(), "GET", "/health").status, 200);
    const HttpReply none = http_request(keyed.port(), "GET", "/v1/models");
    QCOMPARE(none.status, 401);
    QVERIFY(openai_error_shape(none));
    QCOMPARE(http_request(keyed.port(), "GET", "/v1/models", {}, {"Authorization: Bearer wrong"}).status, 401);
    QCOMPARE(post_json(keyed.port(), "/v1/chat/completions", chat("hi", 2)).status, 401);
    QCOMPARE(http_request(keyed.port(), "GET", "/v1/models", {}, {"Authorization: Bearer s3cret"}).status, 200);
    QCOMPARE(post_json(keyed.port(), "/v1/chat/completions", chat("hi", 2), {"Authorization: Bearer s3cret"}).status,
             200);
    QCOMPARE(http_request(keyed.port(), "GET", "/nowhere").status, 401);  // unknown routes do not leak either
  }

  void remote_binding_needs_a_flag() {
    const RunResult refused = run_process({bin_dir() + "/deltafin", "serve", "--model-root", demo_model_dir(), "--host",
                                           "0.0.0.0", "--port", "0", "--no-snapshots"});
    QVERIFY(refused.code != 0);
    QVERIFY2(refused.err.find("--allow-remote") != std::string::npos, refused.err.c_str());
    ServerProcess remote([&] {
      auto a = base_args();
      a.insert(a.end(), {"--host", "0.0.0.0", "--allow-remote"});
      return a;
    }());
    QVERIFY2(remote.ok(), remote.output().c_str());
    QVERIFY(remote.output().find("WARNING") != std::string::npos);
    QCOMPARE(http_request(remote.port(), "GET", "/health").status, 200);
  }

  void disconnect_frees_the_engine() {
    // The random-weight demo: its replies never end by themselves (it seldom draws an end token), so
    // the job is still running when the client goes; the trained demo may finish first.
    ServerProcess s({"--model-root", demo_random_dir(), "--served-model-name", "demo-model", "--no-snapshots",
                     "--max-tokens", "100000"});
    QVERIFY2(s.ok(), s.output().c_str());
    for (const bool chat_route : {false, true}) {
      const json before = health(s.port());
      RawConnection c(s.port());
      json b = chat_route ? chat("Go on forever", 100000, "high")
                          : json{{"model", "demo-model"}, {"prompt", "Go"}, {"max_tokens", 100000}, {"temperature", 0}};
      b["stream"] = true;
      const std::string body = b.dump();
      const std::string path = chat_route ? "/v1/chat/completions" : "/v1/completions";
      c.send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body);
      std::string got = c.read_until("data: ", 60000);
      QVERIFY(got.find("data: ") != std::string::npos);
      c.close();
      json h;
      for (int i = 0; i < 1200; ++i) {
        h = health(s.port());
        if (h["worker"]["jobs_done"] > before["worker"]["jobs_done"] && !h["worker"]["running"].get<bool>()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      QCOMPARE(h["worker"]["jobs_cancelled"].get<int>(), before["worker"]["jobs_cancelled"].get<int>() + 1);
      QVERIFY(h["worker"]["last_completion_tokens"].get<int>() < 100000);
      // The engine is free: a new request is answered.
      QCOMPARE(post_json(s.port(), "/v1/chat/completions", chat("next", 2)).status, 200);
    }
  }

  void prefix_reuse_cuts_the_prefill() {
    std::string system;
    for (int i = 0; i < 40; ++i) system += "Rule " + std::to_string(i) + ": answer carefully and briefly. ";
    json turn1 = {{"model", "demo-model"},
                  {"messages", json::array({{{"role", "system"}, {"content", system}},
                                            {{"role", "user"}, {"content", "First question?"}}})},
                  {"max_tokens", 8},
                  {"temperature", 0},
                  {"reasoning_effort", "none"},
                  {"stream", true},
                  {"stream_options", {{"include_usage", true}}}};
    auto timed = [](int port, const json& body, json& usage, std::string& content) {
      const auto t0 = std::chrono::steady_clock::now();
      RawConnection c(port);
      const std::string b = body.dump();
      c.send(
          "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
          "application/json\r\nContent-Length: " +
          std::to_string(b.size()) + "\r\n\r\n" + b);
      // The role chunk goes out at once; the next event comes after the prefill and the first token.
      c.read_until(
          [](const std::string& got) {
            size_t n = 0;
            for (size_t at = got.find("data: "); at != std::string::npos; at = got.find("data: ", at + 1)) ++n;
            return n >= 2;
          },
          120000);
      const double ttft = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      c.wait_closed(120000);
      const Streamed s = read_stream(parse_http_reply(c.received(), true), true);
      usage = s.events.back()["usage"];
      content = s.content;
      return ttft;
    };
    json u1, u2, u3;
    std::string c1, c2, c3;
    const double ttft1 = timed(port_, turn1, u1, c1);
    QCOMPARE(u1["prompt_tokens_details"]["cached_tokens"], json(0));
    json turn2 = turn1;
    turn2["messages"].push_back({{"role", "assistant"}, {"content", c1}});
    turn2["messages"].push_back({{"role", "user"}, {"content", "Second question?"}});
    const double ttft2 = timed(port_, turn2, u2, c2);
    const int prompt2 = u2["prompt_tokens"], cached2 = u2["prompt_tokens_details"]["cached_tokens"];
    QVERIFY2(cached2 > u1["prompt_tokens"].get<int>() / 2, u2.dump().c_str());  // turn 1 up to its boundary at least
    QVERIFY(cached2 < prompt2);
    // The same second turn from scratch (another server) gives the same tokens.
    ServerProcess fresh(base_args());
    QVERIFY(fresh.ok());
    const double ttft3 = timed(fresh.port(), turn2, u3, c3);
    QCOMPARE(u3["prompt_tokens_details"]["cached_tokens"], json(0));
    QCOMPARE(c3, c2);
    qInfo(
        "time to first token: turn 1 %.3f s (prefill %d tokens); turn 2 with reuse %.3f s (prefill %d of %d); "
        "turn 2 without reuse %.3f s (prefill %d)",
        ttft1, u1["prompt_tokens"].get<int>(), ttft2, prompt2 - cached2, prompt2, ttft3, prompt2);
  }

  void snapshots_survive_a_restart() {
    const std::string dir = temp_dir("serve-snapshots");
    auto args = base_args();
    args.pop_back();  // keep snapshots on
    args.insert(args.end(), {"--snapshot-dir", dir, "--snapshot-min-tokens", "1", "--memo-entries", "0"});
    json turn1 = chat("Remember the number 41.", 6);
    json turn2 = turn1;
    std::string first;
    {
      ServerProcess a(args);
      QVERIFY2(a.ok(), a.output().c_str());
      first = post_json(a.port(), "/v1/chat/completions", turn1).json()["choices"][0]["message"]["content"];
      int files = 0;  // the snapshot is written after the answer went out
      for (int i = 0; i < 600 && files == 0; ++i) {
        files = health(a.port())["worker"]["snapshot_files"].get<int>();
        if (files == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      QVERIFY(files >= 1);
      QCOMPARE(a.stop(), 0);
    }
    turn2["messages"].push_back({{"role", "assistant"}, {"content", first}});
    turn2["messages"].push_back({{"role", "user"}, {"content", "Which number?"}});
    ServerProcess b(args);
    QVERIFY2(b.ok(), b.output().c_str());
    const HttpReply r = post_json(b.port(), "/v1/chat/completions", turn2);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.headers.at("x-deltafin-reuse"), std::string("disk"));
    QVERIFY(r.json()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() > 0);
    const HttpReply again = post_json(port_, "/v1/chat/completions", turn2);  // no snapshots there
    QCOMPARE(r.json()["choices"][0]["message"]["content"], again.json()["choices"][0]["message"]["content"]);
  }
};

QTEST_GUILESS_MAIN(TestServeHttp)
#include "test_serve_http.moc"
