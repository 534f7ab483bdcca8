// Hostile input: well over 200 requests that are malformed, mistyped, huge, invalid UTF-8,
// oversized, stalled (slowloris), or carry unknown or unsupported fields. Each must get the right
// 4xx (OpenAI-shaped where the server can name the problem), the server must keep serving, and
// its memory must stay bounded.
#include <QtTest/QtTest>

#include <thread>

#include "serve_test_support.h"
#include "support/test_support.h"

using namespace deltafin::test;
using nlohmann::json;

namespace {

struct Case {
  std::string name;
  std::string raw;    // the exact bytes sent
  int status;         // the expected status
  std::string param;  // the expected error.param; "-" = not checked
};

std::string post_raw(const std::string& path, const std::string& body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

json good_chat() {
  return {
      {"model", "demo-model"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 2}};
}
json good_completion() { return {{"model", "demo-model"}, {"prompt", "hi"}, {"max_tokens", 2}}; }

std::vector<Case> build_cases() {
  std::vector<Case> cs;
  auto chat_body = [&](const std::string& name, const std::string& body, int status, std::string param = "-") {
    cs.push_back({name, post_raw("/v1/chat/completions", body), status, std::move(param)});
  };
  auto chat_field = [&](const std::string& key, const json& v, int status, std::string param) {
    json b = good_chat();
    b[key] = v;
    chat_body("chat." + key + "=" + v.dump().substr(0, 40), b.dump(), status, std::move(param));
  };
  auto comp_field = [&](const std::string& key, const json& v, int status, std::string param) {
    json b = good_completion();
    b[key] = v;
    cs.push_back({"completion." + key + "=" + v.dump().substr(0, 40), post_raw("/v1/completions", b.dump()), status,
                  std::move(param)});
  };

  // Malformed JSON: every third prefix of a valid body, and assorted broken documents.
  const std::string valid = good_chat().dump();
  for (size_t cut = 0; cut < valid.size(); cut += 3)
    chat_body("truncated at " + std::to_string(cut), valid.substr(0, cut), 400);
  for (const char* bad : {"{",
                          "}",
                          "null",
                          "[]",
                          "\"text\"",
                          "123",
                          "{'model': 'x'}",
                          "{\"model\":}",
                          "{\"a\":1,}",
                          "{\"a\" 1}",
                          "{\"model\": NaN}",
                          "{\"model\": \"demo-model\", \"messages\": [}",
                          "{}x",
                          "{\"a\":1}{\"b\":2}",
                          "{\"model\": \"demo-model\" \"messages\": []}",
                          "\x00{}",
                          "{\"\\q\":1}",
                          "{\"a\": tru}",
                          "{\"a\": 01}",
                          "{\"a\": .5}",
                          "{\"a\": \"\\u12\"}",
                          "{\"a\": [1,,2]}"})
    chat_body(std::string("malformed ") + bad, bad, 400);
  chat_body("empty object", "{}", 400, "model");

  // Wrong types.
  for (const json& v : {json(1), json::array(), json::object(), json(true)}) chat_field("model", v, 400, "model");
  for (const json& v : {json("x"), json::object(), json(5), json::array({1}), json::array({"user"})})
    chat_field("messages", v, 400, "-");
  chat_field("messages", json::array(), 400, "messages");
  chat_field("messages", json::array({{{"role", 1}, {"content", "x"}}}), 400, "messages[0].role");
  chat_field("messages", json::array({{{"role", "user"}}}), 400, "messages[0].content");
  chat_field("messages", json::array({{{"role", "user"}, {"content", 5}}}), 400, "messages[0].content");
  chat_field("messages", json::array({{{"role", "user"}, {"content", json::array({5})}}}), 400,
             "messages[0].content[0]");
  chat_field("messages", json::array({{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", 3}}})}}}),
             400, "messages[0].content[0].text");
  chat_field("messages", json::array({{{"role", "wizard"}, {"content", "x"}}}), 400, "messages[0].role");
  chat_field("messages", json::array({{{"role", "user"}, {"content", "x"}, {"name", 7}}}), 400, "messages[0].name");
  chat_field("messages", json::array({{{"role", "user"}, {"content", "x"}, {"reasoning_content", "y"}}}), 400,
             "messages[0].reasoning_content");
  for (const json& v : {json("1"), json::array(), json::object(), json(true)})
    chat_field("temperature", v, 400, "temperature");
  for (const json& v : {json("x"), json(true), json::array()}) chat_field("top_p", v, 400, "top_p");
  for (const json& v : {json(1.5), json("5"), json(-1), json(0), json(true), json::array()})
    chat_field("max_tokens", v, 400, "max_tokens");
  for (const json& v : {json(1.5), json("5"), json(0)})
    chat_field("max_completion_tokens", v, 400, "max_completion_tokens");
  for (const json& v : {json("yes"), json(1), json::object()}) chat_field("stream", v, 400, "stream");
  chat_field("stop", 5, 400, "stop");
  chat_field("stop", json::object(), 400, "stop");
  chat_field("stop", json::array({1}), 400, "stop[0]");
  chat_field("stop", json::array({""}), 400, "stop[0]");
  chat_field("stop", json::array({"a", "b", "c", "d", "e"}), 400, "stop");
  for (const json& v : {json("x"), json(1.5), json::array()}) chat_field("seed", v, 400, "seed");
  for (const json& v : {json("1"), json(0), json(2), json(1.0)}) chat_field("n", v, 400, "n");
  for (const json& v : {json(5), json("ultra"), json("medium"), json("")})
    chat_field("reasoning_effort", v, 400, "reasoning_effort");
  for (const json& v : {json(-1), json("x"), json(1.5)}) chat_field("top_k", v, 400, "top_k");
  chat_field("user", 5, 400, "user");
  chat_field("response_format", "json", 400, "response_format");
  chat_field("metadata", "x", 400, "metadata");
  chat_field("parallel_tool_calls", "x", 400, "parallel_tool_calls");
  {
    json b = good_chat();
    b["stream"] = true;
    b["stream_options"] = "x";
    chat_body("stream_options string", b.dump(), 400, "stream_options");
    b["stream_options"] = {{"include_usage", "y"}};
    chat_body("include_usage string", b.dump(), 400, "stream_options.include_usage");
    b["stream_options"] = {{"foo", 1}};
    chat_body("stream_options unknown", b.dump(), 400, "stream_options.foo");
  }
  for (const json& v : {json(5), json::object(), json::array({json::array({1, 2}), json::array({3})}),
                        json::array({-1}), json::array({1.5}), json::array({int64_t(99999999999)}),
                        json::array({"a", 1}), json::array(), json::array({json::array()})})
    comp_field("prompt", v, 400, "-");
  comp_field("echo", "x", 400, "echo");
  comp_field("echo", true, 400, "echo");
  comp_field("suffix", "abc", 400, "suffix");
  comp_field("best_of", 2, 400, "best_of");
  comp_field("logprobs", 6, 400, "logprobs");
  comp_field("logprobs", true, 400, "logprobs");
  comp_field("model", "gpt-3.5-turbo-instruct", 404, "model");

  // Huge values.
  chat_field("max_tokens", int64_t(1000000000000), 400, "max_tokens");
  chat_field("max_tokens", uint64_t(18446744073709551615ull), 400, "max_tokens");
  chat_field("temperature", 1e308, 400, "temperature");
  chat_field("temperature", -1e308, 400, "temperature");
  chat_field("top_p", 1e9, 400, "top_p");
  chat_field("n", 1000000000, 400, "n");
  chat_field("top_k", 1000000000, 400, "top_k");
  chat_field("stop", json::array({std::string(5000, 's')}), 400, "stop[0]");
  chat_body("number overflow",
            R"({"model": "demo-model", "messages": [{"role": "user", "content": "hi"}], "temperature": 1e400})", 400);
  {
    json b = good_chat();
    b["messages"][0]["content"] = std::string(60000, 'a');  // under the body limit, over the context
    chat_body("prompt over the context", b.dump(), 400, "messages");
    json ids = good_completion();
    ids["prompt"] = std::vector<int>(3000, 5);
    cs.push_back({"token prompt over the context", post_raw("/v1/completions", ids.dump()), 400, "prompt"});
  }
  chat_body("deep nesting", std::string(30000, '[') + std::string(30000, ']'), 400);
  chat_body("deep nesting in a field",
            R"({"model": "demo-model", "x": )" + std::string(1000, '[') + std::string(1000, ']') + "}", 400);

  // Invalid UTF-8, raw and escaped.
  for (const char* bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf8\x88\x80\x80\x80", "\x80",
                          "a\xfe"
                          "b",
                          "\xf4\x90\x80\x80"}) {
    chat_body("invalid UTF-8 in content",
              R"({"model": "demo-model", "messages": [{"role": "user", "content": ")" + std::string(bad) + R"("}]})",
              400);
    chat_body("invalid UTF-8 in a key", R"({"model": "demo-model", ")" + std::string(bad) + R"(": 1})", 400);
  }
  chat_body("lone surrogate escape", R"({"model": "demo-model", "messages": [{"role": "user", "content": "\ud800"}]})",
            400);
  chat_body("reversed surrogates",
            R"({"model": "demo-model", "messages": [{"role": "user", "content": "\udc00\ud800"}]})", 400);

  // Unknown fields, at every level.
  for (const char* k : {"foo", "temperatur", "max_token", "messages ", "Model", "prompt", "functions_x", "logit_biass"})
    chat_field(k, 1, 400, k);
  chat_field("messages", json::array({{{"role", "user"}, {"content", "x"}, {"color", "red"}}}), 400,
             "messages[0].color");
  chat_field(
      "messages",
      json::array({{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "x"}, {"extra", 1}}})}}}),
      400, "messages[0].content[0].extra");
  chat_field("response_format", {{"type", "text"}, {"strict", true}}, 400, "response_format.strict");
  comp_field("messages", json::array(), 400, "messages");

  // Unsupported features are refused, never ignored.
  chat_field("tools", json::array({{{"type", "retrieval"}}}), 400, "tools[0].type");
  chat_field("tools", json::array({{{"type", "function"}, {"function", {{"name", ""}}}}}), 400,
             "tools[0].function.name");
  chat_field("tools", "all", 400, "tools");
  chat_field("tool_choice", {{"type", "function"}, {"function", {{"name", "f"}}}}, 400, "tool_choice");
  chat_field("tool_choice", "sometimes", 400, "tool_choice");
  chat_field("functions", json::array({{{"name", "f"}}}), 400, "functions");
  chat_field("function_call", "auto", 400, "function_call");
  chat_field("logprobs", "yes", 400, "logprobs");
  chat_field("top_logprobs", 3, 400, "top_logprobs");  // without logprobs
  chat_field("top_logprobs", 21, 400, "top_logprobs");
  chat_field("logit_bias", {{"5", 10}}, 400, "logit_bias");
  chat_field("presence_penalty", 0.5, 400, "presence_penalty");
  chat_field("frequency_penalty", -0.5, 400, "frequency_penalty");
  chat_field("response_format", {{"type", "grammar"}}, 400, "response_format.type");
  chat_field("response_format", {{"type", "json_schema"}}, 400, "response_format.json_schema");
  chat_field("audio", {{"voice", "x"}}, 400, "audio");
  chat_field("modalities", json::array({"text", "audio"}), 400, "modalities");
  chat_field("store", true, 400, "store");
  chat_field("prediction", {{"type", "content"}}, 400, "prediction");
  chat_field("web_search_options", json::object(), 400, "web_search_options");
  chat_field("messages", json::array({{{"role", "tool"}, {"content", "x"}, {"tool_call_id", "1"}}}), 400,
             "messages");  // answers no call
  chat_field("messages",
             json::array({{{"role", "user"},
                           {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", "x"}}}}})}}}),
             400, "messages[0].content[0].type");
  chat_field("messages", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_audio"}}})}}}), 400,
             "messages[0].content[0].type");
  chat_field("messages",
             json::array({{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({{{"id", "1"}}})}}}),
             400, "messages[0].tool_calls[0].function");
  chat_field("messages",
             json::array(
                 {{{"role", "assistant"},
                   {"content", nullptr},
                   {"tool_calls", json::array({{{"id", "1"}, {"function", {{"name", "f"}, {"arguments", "[1]"}}}}})}}}),
             400, "messages[0].tool_calls[0].function.arguments");
  chat_field("messages", json::array({{{"role", "user"}, {"content", "x"}, {"tool_calls", json::array()}}}), 400,
             "messages[0].tool_calls");
  {
    json b = good_chat();
    b["stream_options"] = {{"include_usage", true}};  // without stream
    chat_body("stream_options without stream", b.dump(), 400, "stream_options");
    b = good_chat();
    b["max_tokens"] = 3;
    b["max_completion_tokens"] = 4;
    chat_body("conflicting max tokens", b.dump(), 400, "max_completion_tokens");
  }

  // Oversized bodies (the test server allows 65536 bytes).
  const std::string big(70000, ' ');
  cs.push_back({"body over the limit", post_raw("/v1/chat/completions", big), 413, "-"});
  cs.push_back({"completion body over the limit",
                post_raw("/v1/completions", "{\"prompt\": \"" + std::string(70000, 'a') + "\"}"), 413, "-"});
  {
    std::string chunked =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nTransfer-Encoding: "
        "chunked\r\n\r\n";
    for (int i = 0; i < 20; ++i) chunked += "1000\r\n" + std::string(4096, ' ') + "\r\n";
    chunked += "0\r\n\r\n";
    cs.push_back({"chunked body over the limit", chunked, 413, "-"});
  }
  cs.push_back({"declared length over the limit",
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: "
                "1000000000000\r\n\r\n{}",
                413, "-"});

  // Broken HTTP.
  cs.push_back({"garbage request line", "GARBAGE\r\n\r\n", 400, "-"});
  cs.push_back({"no version", "GET /v1/models\r\n\r\n", 400, "-"});
  cs.push_back({"URI too long", "GET /" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414, "-"});
  cs.push_back({"no content length",
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n{}", 411, "-"});
  cs.push_back(
      {"bad content length",
       "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: abc\r\n\r\n{}", 400,
       "-"});
  cs.push_back({"unknown path", "GET /v2/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 404, "-"});
  cs.push_back(
      {"wrong method", "GET /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 405, "-"});
  cs.push_back(
      {"delete a model", "DELETE /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 404, "-"});
  cs.push_back({"post to models", post_raw("/v1/models", "{}"), 404, "-"});
  cs.push_back(
      {"path traversal", "GET /../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 404, "-"});

  // DNS rebinding and browser pages of other sites.
  for (const char* host : {"evil.example", "evil.example:8000", "localhost.evil.example", "127.0.0.1.nip.io", ""})
    cs.push_back({std::string("rebinding Host ") + host,
                  "GET /v1/models HTTP/1.1\r\nHost: " + std::string(host) + "\r\nConnection: close\r\n\r\n", 403, "-"});
  {
    std::string rebound = post_raw("/v1/chat/completions", good_chat().dump());
    rebound.replace(rebound.find("Host: 127.0.0.1"), 15, "Host: attacker.test");
    cs.push_back({"rebinding Host on a chat POST", rebound, 403, "-"});
    std::string cross = post_raw("/v1/chat/completions", good_chat().dump());
    cross.insert(cross.find("\r\n") + 2, "Origin: https://evil.example\r\n");
    cs.push_back({"cross-origin POST", cross, 403, "-"});
    std::string preflight =
        "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\n"
        "Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n";
    cs.push_back({"cross-origin preflight", preflight, 403, "-"});
  }

  // Header blocks: a line past the head's 64 KiB, and many small headers past the server's bounds.
  cs.push_back({"huge header line",
                "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(200000, 'a') +
                    "\r\nConnection: close\r\n\r\n",
                431, "-"});
  {
    std::string many = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    for (int i = 0; i < 500; ++i) many += "X-H" + std::to_string(i) + ": " + std::string(200, 'b') + "\r\n";
    cs.push_back({"many headers", many + "\r\n", 431, "-"});
  }

  // Chunked bodies past the limit on every route that reads one (known or not).
  for (const char* path : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/embeddings", "/anything"}) {
    std::string chunked = "POST " + std::string(path) +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 64; ++i) chunked += "4000\r\n" + std::string(16384, 'c') + "\r\n";  // 1 MiB
    chunked += "0\r\n\r\n";
    cs.push_back({std::string("chunked bomb to ") + path, chunked, 413, "-"});
  }
  for (const char* method : {"PUT", "PATCH", "DELETE"}) {
    cs.push_back({std::string(method) + " with a large body",
                  std::string(method) +
                      " /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 70000\r\n\r\n" +
                      std::string(70000, 'd'),
                  413, "-"});
  }
  // Compressed bodies under the limit that inflate far past it: the limit counts inflated bytes.
  {
    const QByteArray zeros(32 << 20, ' ');
    const QByteArray z = qCompress(zeros, 9).mid(4);  // a zlib stream (cpp-httplib's gzip decoder takes zlib too)
    const std::string bomb(z.constData(), static_cast<size_t>(z.size()));
    for (const char* path : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/nowhere"})
      cs.push_back({std::string("gzip bomb to ") + path,
                    "POST " + std::string(path) +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
                        "Content-Encoding: gzip\r\nContent-Length: " +
                        std::to_string(bomb.size()) + "\r\n\r\n" + bomb,
                    413, "-"});
  }
  return cs;
}

}  // namespace

class TestServeHostile : public QObject {
  Q_OBJECT

 private slots:
  void hostile_requests_get_the_right_4xx() {
    ServerProcess s({"--model-root", demo_model_dir(), "--no-snapshots", "--read-timeout", "1", "--body-deadline", "3",
                     "--max-body-bytes", "65536", "--max-tokens", "64", "--max-context", "2048", "--queue-size", "8"});
    QVERIFY2(s.ok(), s.output().c_str());
    const int port = s.port();
    // Warm up, then take the baseline memory.
    for (int i = 0; i < 3; ++i) QCOMPARE(post_json(port, "/v1/chat/completions", good_chat()).status, 200);
    const long rss0 = s.rss_kb();
    QVERIFY(rss0 > 0);

    const std::vector<Case> cases = build_cases();
    QVERIFY2(cases.size() >= 200, std::to_string(cases.size()).c_str());
    int checked = 0;
    std::vector<std::string> wrong;            // every mismatch, reported together
    for (int round = 0; round < 2; ++round) {  // twice, so that growth per request would show
      for (const Case& c : cases) {
        const HttpReply r = http_raw(port, c.raw, 30000);
        const std::string what = c.name + ": got " + std::to_string(r.status) + " " + r.body.substr(0, 300);
        const json j = r.json();
        const bool shaped =
            j.is_object() && j.contains("error") && j["error"].contains("message") && j["error"]["message"].is_string();
        if (r.status != c.status || !shaped || (c.param != "-" && j["error"]["param"] != json(c.param)))
          wrong.push_back(what + " (wanted " + std::to_string(c.status) + (c.param != "-" ? " param " + c.param : "") +
                          ")");
        if (++checked % 25 == 0) QCOMPARE(http_request(port, "GET", "/health").status, 200);
      }
    }
    std::string report;
    for (const auto& w : wrong) report += w + "\n";
    QVERIFY2(wrong.empty(), report.c_str());

    // Slowloris: connections that stop mid-request are closed by the server (--read-timeout 1)
    // while others keep being served.
    std::vector<std::unique_ptr<RawConnection>> slow;
    const std::vector<std::string> partial = {
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        "POST /v1/chat/comp",
        "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: aaaa",
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 500\r\n\r\n{\"model\": \"demo-",
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"model\": "
        "\"demo",
    };
    for (int i = 0; i < 30; ++i) {
      slow.push_back(std::make_unique<RawConnection>(port));
      QVERIFY(slow.back()->send(partial[i % partial.size()]));
    }
    QCOMPARE(post_json(port, "/v1/chat/completions", good_chat()).status, 200);
    for (auto& c : slow) {
      QVERIFY(c->wait_closed(60000));
      const HttpReply r = parse_http_reply(c->received(), true);
      QVERIFY2(r.status == 0 || (r.status >= 400 && r.status < 500), c->received().c_str());
      checked++;
    }
    QVERIFY(s.running());
    QCOMPARE(post_json(port, "/v1/chat/completions", good_chat()).status, 200);
    QCOMPARE(post_json(port, "/v1/completions", good_completion()).status, 200);

    // A body that trickles in, each byte well within --read-timeout: dropped at --body-deadline.
    {
      RawConnection t(port);
      QVERIFY(
          t.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                 "application/json\r\nContent-Length: 50000\r\n\r\n{"));
      bool answered = false;
      for (int i = 0; i < 200 && !answered; ++i) {  // at most 200 bytes, one per 250 ms
        t.read_until("\r\n\r\n", 250);
        answered = t.received().find("HTTP/1.1 ") != std::string::npos || !t.send(" ");
      }
      QVERIFY2(answered, "a trickling body was never cut off");
      QCOMPARE(parse_http_reply(t.received(), true).status, 408);
      ++checked;
    }
    // A head that trickles in, one byte per 250 ms: dropped at --body-deadline too.
    {
      RawConnection t(port);
      QVERIFY(t.send("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
      bool answered = false;
      for (int i = 0; i < 200 && !answered; ++i) {
        t.read_until("\r\n\r\n", 250);
        answered = t.received().find("HTTP/1.1 ") != std::string::npos || !t.send("a");
      }
      QVERIFY2(answered, "a trickling head was never cut off");
      QCOMPARE(parse_http_reply(t.received(), true).status, 408);
      ++checked;
    }
    // Every error says "Connection: close" and the server then closes the connection, though the
    // request asked to keep it (--keep-alive would hold it 5 s).
    {
      RawConnection c(port);
      QVERIFY(c.send("GET /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
      QVERIFY2(c.wait_closed(3000), c.received().c_str());
      const HttpReply r = parse_http_reply(c.received(), true);
      QCOMPARE(r.status, 404);
      QCOMPARE(r.headers.at("connection"), std::string("close"));
    }
    QVERIFY(s.running());

    const long rss1 = s.rss_kb();
    qInfo("%d hostile requests; server RSS %ld kB before, %ld kB after", checked, rss0, rss1);
    QVERIFY2(rss1 - rss0 < 64 * 1024, (std::to_string(rss0) + " -> " + std::to_string(rss1)).c_str());
  }

  // Heads far past the bounds (an endless request line, an endless header line, endless header
  // lines each under 8 KiB): refused while they arrive, the server's peak memory barely moving.
  void huge_heads_are_refused_with_memory_bounded() {
    ServerProcess s({"--model-root", demo_model_dir(), "--no-snapshots", "--read-timeout", "5", "--max-tokens", "8"});
    QVERIFY2(s.ok(), s.output().c_str());
    const int port = s.port();
    for (int i = 0; i < 3; ++i) QCOMPARE(post_json(port, "/v1/chat/completions", good_chat()).status, 200);
    const long peak0 = s.peak_rss_kb();
    QVERIFY(peak0 > 0);

    const size_t huge = size_t(96) << 20;
    std::string many = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    while (many.size() < huge) many += "X-H" + std::to_string(many.size()) + ": " + std::string(8000, 'h') + "\r\n";
    const std::vector<std::pair<std::string, int>> heads = {
        {"GET /" + std::string(huge, 'a'), 414},
        {"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(huge, 'b'), 431},
        {many, 431},
    };
    for (const auto& [raw, status] : heads) {
      const HttpReply r = http_raw(port, raw, 30000);
      QCOMPARE(r.status, status);
      QCOMPARE(r.headers.at("connection"), std::string("close"));
      QVERIFY2(r.json().contains("error"), r.body.c_str());
      QCOMPARE(http_request(port, "GET", "/health").status, 200);
    }
    const long peak1 = s.peak_rss_kb();
    qInfo("three heads of %zu MiB each; server peak RSS %ld kB before, %ld kB after", huge >> 20, peak0, peak1);
    QVERIFY2(peak1 - peak0 < 16 * 1024, (std::to_string(peak0) + " -> " + std::to_string(peak1)).c_str());
    QVERIFY(s.running());
  }
};

QTEST_GUILESS_MAIN(TestServeHostile)
#include "test_serve_hostile.moc"
