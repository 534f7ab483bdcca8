// The server against a scripted engine (scripted_engine.h): the model's output is forced, so the
// tool-call, reasoning and logprobs paths parse exactly the ids the test chose, and the engine
// blocks where the test says until it is released, on a clock that moves only when the test
// moves it: the queue and timeout tests never depend on how fast this machine decodes.
#include <QtTest/QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "runtime/k3_model.h"
#include "scripted_engine.h"
#include "serve/http_server.h"
#include "serve_test_support.h"
#include "support/test_support.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

using namespace deltafin;
using namespace deltafin::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string kModel = "k3-tiny";

// The weather tool call: reasoning, a short answer, then two calls (typed arguments, a json block).
const std::string kCallReply =
    "Need the forecast.<|close|>think<|sep|><|open|>response<|sep|>Let me "
    "look.<|close|>response<|sep|><|open|>tools<|sep|>"
    "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
    "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris \"centre\"<|close|>argument<|sep|>"
    "<|open|>argument key=\"days\" type=\"number\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>"
    "<|open|>call tool=\"get_time\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>{\"tz\": "
    "\"CET\"}<|close|>json<|sep|><|close|>call<|sep|>"
    "<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>";
const std::string kAnswerReply =
    "Both known.<|close|>think<|sep|><|open|>response<|sep|>Sunny, 21 degrees at "
    "14:05.<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";

const json kTools = json::parse(R"([{"type":"function","function":{"name":"get_weather","description":"Weather",
  "parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"number"}}}}},
  {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}])");

// An in-process `deltafin serve` on k3-tiny whose sessions are scripted.
struct ScriptedServer {
  std::unique_ptr<K3Model> model;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<ScriptedEngine> engine;
  FakeClock clock;
  std::unique_ptr<serve::OpenAiServer> server;
  std::thread thread;
  int port = 0;

  explicit ScriptedServer(const std::function<void(serve::ServerOptions&, ScriptedEngine&)>& setup = {}) {
    const std::string root = fixtures_dir() + "/k3-tiny";
    model = K3Model::load(root);
    tok = load_tokenizer(root);
    engine = std::make_unique<ScriptedEngine>(*tok);
    serve::ServerOptions o;
    o.port = 0;
    o.worker.make_session = engine->session_factory();
    o.worker.now = clock.function();
    o.worker.memo_entries = 0;
    if (setup) setup(o, *engine);
    server = std::make_unique<serve::OpenAiServer>(o, *model, *tok);
    port = server->bind();
    thread = std::thread([this] { server->serve(); });
  }
  ~ScriptedServer() {
    engine->open();  // a failed test must not leave the worker held
    server->stop();
    thread.join();
  }
};

json health(int port) { return http_request(port, "GET", "/health").json(); }

json weather_request(bool stream) {
  json b = {{"model", kModel},
            {"messages", json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}})},
            {"tools", kTools},
            {"temperature", 0},
            {"max_tokens", 400}};
  if (stream) b["stream"] = true;
  return b;
}

struct Streamed {
  std::string content, reasoning, finish;
  json tool_calls = json::array();
  json logprobs = json::array();
  int tool_call_chunks = 0;
  bool done = false;
};
Streamed read_stream(const HttpReply& r) {
  Streamed s;
  for (const std::string& d : r.sse_data()) {
    if (d == "[DONE]") {
      s.done = true;
      continue;
    }
    const json j = json::parse(d, nullptr, false);
    if (!j.contains("choices")) continue;
    for (const json& c : j["choices"]) {
      const json& delta = c["delta"];
      if (delta.contains("content") && delta["content"].is_string()) s.content += delta["content"].get<std::string>();
      if (delta.contains("reasoning_content")) s.reasoning += delta["reasoning_content"].get<std::string>();
      if (delta.contains("tool_calls")) {
        ++s.tool_call_chunks;
        for (const json& tc : delta["tool_calls"]) s.tool_calls.push_back(tc);
      }
      if (c.contains("logprobs") && c["logprobs"].is_object())
        for (const json& e : c["logprobs"]["content"]) s.logprobs.push_back(e);
      if (c["finish_reason"].is_string()) s.finish = c["finish_reason"];
    }
  }
  return s;
}

}  // namespace

class TestServeScripted : public QObject {
  Q_OBJECT

 private slots:
  void tool_calls_come_back_parsed();
  void tool_results_go_back_to_the_model_in_call_order();
  void logprobs_come_from_the_logits();
  void completion_logprobs_in_the_legacy_form();
  void response_format_reaches_the_prompt();
  void request_timeout_ends_a_long_answer();
  void queued_request_times_out();
  void queue_refuses_with_429_and_serves_in_order();
  void messages_api_round_trip();
  void responses_api_round_trip();
  void model_names_and_refusals();
  void openai_client_tool_round_trip();
};

void TestServeScripted::tool_calls_come_back_parsed() {
  ScriptedServer s([](serve::ServerOptions&, ScriptedEngine& e) { e.on("weather in Paris", kCallReply); });
  const HttpReply r = post_json(s.port, "/v1/chat/completions", weather_request(false));
  QCOMPARE(r.status, 200);
  const json j = r.json();
  const json& choice = j["choices"][0];
  QCOMPARE(choice["finish_reason"], json("tool_calls"));
  QCOMPARE(choice["message"]["content"], json("Let me look."));
  QCOMPARE(choice["message"]["reasoning_content"], json("Need the forecast."));
  const json& calls = choice["message"]["tool_calls"];
  QCOMPARE(calls.size(), size_t(2));
  QCOMPARE(calls[0]["type"], json("function"));
  QCOMPARE(calls[0]["function"]["name"], json("get_weather"));
  QCOMPARE(json::parse(calls[0]["function"]["arguments"].get<std::string>()),
           json({{"city", "Paris \"centre\""}, {"days", 3}}));
  QCOMPARE(calls[1]["function"]["name"], json("get_time"));
  QCOMPARE(calls[1]["function"]["arguments"], json("{\"tz\": \"CET\"}"));
  QVERIFY(calls[0]["id"].get<std::string>().starts_with("call_"));
  QVERIFY(calls[0]["id"] != calls[1]["id"]);

  // Streamed: one delta per completed call, indexed, ids of their own; the same calls.
  const Streamed st = read_stream(post_json(s.port, "/v1/chat/completions", weather_request(true)));
  QVERIFY(st.done);
  QCOMPARE(st.finish, std::string("tool_calls"));
  QCOMPARE(st.content, std::string("Let me look."));
  QCOMPARE(st.reasoning, std::string("Need the forecast."));
  QCOMPARE(st.tool_calls.size(), size_t(2));
  QCOMPARE(st.tool_call_chunks, 2);
  for (size_t i = 0; i < 2; ++i) {
    QCOMPARE(st.tool_calls[i]["index"], json(i));
    QCOMPARE(st.tool_calls[i]["function"], calls[i]["function"]);
  }

  // parallel_tool_calls=false: the first call only.
  json one = weather_request(false);
  one["parallel_tool_calls"] = false;
  QCOMPARE(post_json(s.port, "/v1/chat/completions", one).json()["choices"][0]["message"]["tool_calls"].size(),
           size_t(1));
}

void TestServeScripted::tool_results_go_back_to_the_model_in_call_order() {
  ScriptedServer s([](serve::ServerOptions&, ScriptedEngine& e) {
    e.on("weather in Paris", kCallReply);
    e.on("role=\"tool\"", kAnswerReply);
  });
  const json first = post_json(s.port, "/v1/chat/completions", weather_request(false)).json()["choices"][0]["message"];
  json b = weather_request(false);
  b["messages"].push_back(first);
  // The results in the other order: tool_call_id puts them back.
  b["messages"].push_back({{"role", "tool"}, {"tool_call_id", first["tool_calls"][1]["id"]}, {"content", "14:05"}});
  b["messages"].push_back(
      {{"role", "tool"}, {"tool_call_id", first["tool_calls"][0]["id"]}, {"content", "21C, sunny"}});
  const HttpReply r = post_json(s.port, "/v1/chat/completions", b);
  QCOMPARE(r.status, 200);
  QCOMPARE(r.json()["choices"][0]["message"]["content"], json("Sunny, 21 degrees at 14:05."));
  QCOMPARE(r.json()["choices"][0]["finish_reason"], json("stop"));
  QVERIFY(!r.json()["choices"][0]["message"].contains("tool_calls"));
  // What the model read (K3-SPEC section 4), written out from the spec.
  const std::string want =
      "[BOS]<|open|>message role=\"system\" type=\"tool-declare\"<|sep|># Tools\nHere are the available tools, "
      "described in JSONSchema.\n\n```json\n"
      "[{\"function\":{\"description\":\"Weather\",\"name\":\"get_weather\",\"parameters\":{\"properties\":{\"city\":{"
      "\"type\":\"string\"},\"days\":{\"type\":\"number\"}},\"type\":\"object\"}},\"type\":\"function\"},"
      "{\"function\":{\"name\":\"get_time\",\"parameters\":{\"properties\":{\"tz\":{\"type\":\"string\"}},\"type\":"
      "\"object\"}},\"type\":\"function\"}]\n```"
      "<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"user\"<|sep|>What is the weather in Paris?<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>Need the "
      "forecast.<|close|>think<|sep|><|open|>response<|sep|>Let me look.<|close|>response<|sep|>"
      "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
      "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris \"centre\"<|close|>argument<|sep|>"
      "<|open|>argument key=\"days\" type=\"number\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>"
      "<|open|>call tool=\"get_time\" index=\"2\"<|sep|><|open|>argument key=\"tz\" "
      "type=\"string\"<|sep|>CET<|close|>argument<|sep|><|close|>call<|sep|>"
      "<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"tool\" tool=\"get_weather\" index=\"1\"<|sep|>21C, "
      "sunny<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"tool\" tool=\"get_time\" index=\"2\"<|sep|>14:05<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>";
  QCOMPARE(s.engine->last_prompt_text(), want);
}

void TestServeScripted::logprobs_come_from_the_logits() {
  const std::string answer = "Hello there";
  ScriptedServer s([&](serve::ServerOptions&, ScriptedEngine& e) {
    e.on("Greet", "<|close|>think<|sep|><|open|>response<|sep|>" + answer +
                      "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>");
  });
  json b = {{"model", "kimi-k3"}, {"messages", json::array({{{"role", "user"}, {"content", "Greet me"}}})},
            {"temperature", 0},   {"logprobs", true},
            {"top_logprobs", 3},  {"max_tokens", 50}};
  const HttpReply r = post_json(s.port, "/v1/chat/completions", b);
  QCOMPARE(r.status, 200);
  const json reply = r.json();
  const json& lp = reply["choices"][0]["logprobs"]["content"];
  const auto answer_ids = s.tok->encode(answer, false);
  QCOMPARE(lp.size(), answer_ids.size());
  // The scripted logits: the chosen token 8, the next id 4, the rest 0 (vocab V).
  const double V = s.model->config().vocab;
  const double top = 8 - std::log(std::exp(8.0) + std::exp(4.0) + (V - 2));
  std::string text;
  for (size_t i = 0; i < lp.size(); ++i) {
    QCOMPARE(lp[i]["token"], json(s.tok->token_bytes(answer_ids[i])));
    QVERIFY(std::abs(lp[i]["logprob"].get<double>() - top) < 1e-9);
    QCOMPARE(lp[i]["top_logprobs"].size(), size_t(3));
    QCOMPARE(lp[i]["top_logprobs"][0]["token"], lp[i]["token"]);
    QVERIFY(lp[i]["top_logprobs"][1]["logprob"].get<double>() < lp[i]["top_logprobs"][0]["logprob"].get<double>());
    text += lp[i]["token"].get<std::string>();
  }
  QCOMPARE(text, answer);
  QCOMPARE(reply["model"], json("kimi-k3"));  // the alias is served and echoed
  b["stream"] = true;
  const Streamed st = read_stream(post_json(s.port, "/v1/chat/completions", b));
  QCOMPARE(st.content, answer);
  QCOMPARE(st.logprobs, lp);
}

// /v1/completions: `logprobs` is the legacy integer (alternatives per token) and the answer holds
// tokens, token_logprobs, top_logprobs (token -> logprob) and text_offset, streamed and not.
void TestServeScripted::completion_logprobs_in_the_legacy_form() {
  const std::string answer = "Plain words follow";
  ScriptedServer s([&](serve::ServerOptions&, ScriptedEngine& e) { e.on("Continue", answer + "<|end_of_msg|>"); });
  // A token prompt that ends in the assistant's opening, so the scripted engine answers it.
  const std::vector<ChatMessage> chat = {ChatMessage("user", "Continue please")};
  ChatOptions opt;
  opt.thinking = false;
  const std::vector<int32_t> prompt = render_chat(*s.tok, chat, opt);
  json b = {{"model", kModel}, {"prompt", prompt}, {"temperature", 0}, {"logprobs", 2}, {"max_tokens", 40}};
  const HttpReply r = post_json(s.port, "/v1/completions", b);
  QCOMPARE(r.status, 200);
  const json reply = r.json();
  QCOMPARE(reply["choices"][0]["text"], json(answer));
  const json& lp = reply["choices"][0]["logprobs"];
  const auto ids = s.tok->encode(answer, false);
  QCOMPARE(lp["tokens"].size(), ids.size());
  const double V = s.model->config().vocab;
  const double top = 8 - std::log(std::exp(8.0) + std::exp(4.0) + (V - 2));  // the scripted logits
  const double second = 4 - std::log(std::exp(8.0) + std::exp(4.0) + (V - 2));
  size_t offset = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string token = s.tok->token_bytes(ids[i]);
    QCOMPARE(lp["tokens"][i], json(token));
    QVERIFY(std::abs(lp["token_logprobs"][i].get<double>() - top) < 1e-9);
    QCOMPARE(lp["text_offset"][i].get<size_t>(), offset);
    offset += token.size();
    const json& alts = lp["top_logprobs"][i];
    QCOMPARE(alts.size(), size_t(2));
    // The chosen token, and the runner-up (whose bytes may not be text: then its key is U+FFFD).
    for (auto it = alts.begin(); it != alts.end(); ++it)
      QVERIFY2(std::abs(it.value().get<double>() - (it.key() == token ? top : second)) < 1e-9, it.key().c_str());
    QVERIFY(alts.contains(token));
  }
  // Streamed: the same entries, spread over the chunks, offsets continuing from chunk to chunk.
  b["stream"] = true;
  json tokens = json::array(), offsets = json::array();
  std::string text;
  for (const std::string& d : post_json(s.port, "/v1/completions", b).sse_data()) {
    const json j = json::parse(d, nullptr, false);
    if (!j.is_object() || j["choices"].empty()) continue;
    const json& c = j["choices"][0];
    text += c["text"].get<std::string>();
    if (c["logprobs"].is_object())
      for (size_t i = 0; i < c["logprobs"]["tokens"].size(); ++i) {
        tokens.push_back(c["logprobs"]["tokens"][i]);
        offsets.push_back(c["logprobs"]["text_offset"][i]);
      }
  }
  QCOMPARE(text, answer);
  QCOMPARE(tokens, lp["tokens"]);
  QCOMPARE(offsets, lp["text_offset"]);
  // Out of range or of the chat API's boolean form: refused, naming the field.
  for (const json& bad : {json(6), json(-1), json(true), json("2")}) {
    b["logprobs"] = bad;
    b.erase("stream");
    const HttpReply e = post_json(s.port, "/v1/completions", b);
    QCOMPARE(e.status, 400);
    QCOMPARE(e.json()["error"]["param"], json("logprobs"));
  }
}

void TestServeScripted::response_format_reaches_the_prompt() {
  ScriptedServer s([](serve::ServerOptions&, ScriptedEngine& e) {
    e.on("JSON please", "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>");
  });
  json b = {{"model", kModel},
            {"messages", json::array({{{"role", "user"}, {"content", "JSON please"}}})},
            {"reasoning_effort", "none"},
            {"response_format",
             {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {{"type", "object"}}}}}}},
            {"tool_choice", "none"}};
  const HttpReply r = post_json(s.port, "/v1/chat/completions", b);
  QCOMPARE(r.status, 200);
  QVERIFY(s.engine->last_prompt_text().ends_with(
      "<|open|>message role=\"system\" type=\"tool-choice\"<|sep|>The system is invoked with `tool_choice=none`.\nYou "
      "MUST NOT call any tools in the next message.<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"system\" type=\"response-format\"<|sep|>The system is invoked with "
      "`response_format=json_schema`.\nYour response must be raw JSON data without markdown code blocks (```json) or "
      "any additional formatting."
      "\nThe JSON data must match the following "
      "schema:\n```json\n{\"type\":\"object\"}\n```<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>"));
}

// The answer is held at its 6th token; the clock moves past --request-timeout; released, the
// worker sees the deadline at the next token and ends the answer there: exactly 6 tokens.
void TestServeScripted::request_timeout_ends_a_long_answer() {
  ScriptedServer s([](serve::ServerOptions& o, ScriptedEngine& e) {
    o.request_timeout_s = 60;
    o.max_tokens = 4000;
    e.on("Long", "<|close|>think<|sep|><|open|>response<|sep|>tick tock ", /*repeat=*/true, /*hold_at=*/5);
  });
  json b = {{"model", kModel},    {"messages", json::array({{{"role", "user"}, {"content", "Long answer"}}})},
            {"max_tokens", 4000}, {"temperature", 0},
            {"stream", true},     {"stream_options", {{"include_usage", true}}}};
  std::atomic<bool> finished{false};
  HttpReply reply;
  std::thread client([&] {
    reply = post_json(s.port, "/v1/chat/completions", b);
    finished = true;
  });
  QVERIFY(s.engine->wait_held(1, 60s));
  QVERIFY(!finished);
  s.clock.advance(std::chrono::seconds(61));
  s.engine->release();
  client.join();
  const Streamed st = read_stream(reply);
  QVERIFY(st.done);
  QCOMPARE(st.finish, std::string("length"));
  const json usage = json::parse(reply.sse_data().at(reply.sse_data().size() - 2))["usage"];
  QCOMPARE(usage["completion_tokens"], json(6));
}

// A request that waits in the queue past its deadline gets 504, without ever running.
void TestServeScripted::queued_request_times_out() {
  ScriptedServer s([](serve::ServerOptions& o, ScriptedEngine& e) {
    o.request_timeout_s = 60;
    e.on("Block",
         "<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>",
         false, 1);
  });
  auto ask = [&](const std::string& text) {
    return post_json(
        s.port, "/v1/chat/completions",
        {{"model", kModel}, {"messages", json::array({{{"role", "user"}, {"content", text}}})}, {"temperature", 0}});
  };
  HttpReply blocker, waiter;
  std::thread a([&] { blocker = ask("Block"); });
  QVERIFY(s.engine->wait_held(1, 60s));
  std::thread b([&] { waiter = ask("Wait"); });
  for (int i = 0; i < 6000 && health(s.port)["queue"]["waiting"] != json(1); ++i) std::this_thread::sleep_for(10ms);
  QCOMPARE(health(s.port)["queue"]["waiting"], json(1));
  s.clock.advance(std::chrono::seconds(61));
  b.join();
  QCOMPARE(waiter.status, 504);
  QCOMPARE(waiter.json()["error"]["code"], json("timeout"));
  s.engine->release();
  a.join();
  // The running one ran past its time too (the clock moved for everyone): it ends at its next token.
  QCOMPARE(blocker.status, 200);
  QCOMPARE(blocker.json()["choices"][0]["finish_reason"], json("length"));
  QCOMPARE(blocker.json()["usage"]["completion_tokens"], json(2));
}

// The engine is held inside the first request: every other request is queued or refused
// with 429 while it is held, then served in arrival order once it is released.
void TestServeScripted::queue_refuses_with_429_and_serves_in_order() {
  for (const int capacity : {4, 16}) {
    ScriptedServer s([&](serve::ServerOptions& o, ScriptedEngine& e) {
      o.queue_size = static_cast<size_t>(capacity);
      e.on("Busy",
           "<|close|>think<|sep|><|open|>response<|sep|>done<|close|>response<|sep|><|close|>message<|sep|><|end_of_"
           "msg|>",
           false, 2);
      e.on("Client",
           "<|close|>think<|sep|><|open|>response<|sep|>hi<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|"
           ">");
    });
    auto body = [](const std::string& text) {
      return json{
          {"model", kModel}, {"messages", json::array({{{"role", "user"}, {"content", text}}})}, {"temperature", 0}};
    };
    HttpReply blocker_reply;
    std::thread blocker([&] { blocker_reply = post_json(s.port, "/v1/chat/completions", body("Busy")); });
    QVERIFY(s.engine->wait_held(1, 60s));

    constexpr int kClients = 16;
    std::vector<HttpReply> replies(kClients);
    std::vector<std::atomic<int>> status(kClients);
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
      // One at a time into the queue, so arrival order is the order sent.
      const int waiting_before = health(s.port)["queue"]["waiting"].get<int>();
      threads.emplace_back([&, i] {
        replies[i] = post_json(s.port, "/v1/chat/completions", body("Client " + std::to_string(i)));
        status[i] = replies[i].status;
      });
      for (int t = 0; t < 6000; ++t) {
        if (health(s.port)["queue"]["waiting"].get<int>() > waiting_before || status[i] == 429) break;
        std::this_thread::sleep_for(5ms);
      }
    }
    QCOMPARE(health(s.port)["worker"]["jobs_done"], json(0));  // held throughout
    s.engine->release();
    blocker.join();
    for (auto& t : threads) t.join();
    QCOMPARE(blocker_reply.status, 200);
    int ok = 0, busy = 0;
    std::vector<std::pair<uint64_t, uint64_t>> order;  // (arrival, start)
    for (int i = 0; i < kClients; ++i) {
      const HttpReply& r = replies[i];
      if (r.status == 200) {
        ++ok;
        QCOMPARE(r.json()["choices"][0]["message"]["content"], json("hi"));
        order.emplace_back(std::stoull(r.headers.at("x-deltafin-seq")),
                           std::stoull(r.headers.at("x-deltafin-started")));
        QVERIFY(i < capacity);  // the first `capacity` clients got the places
      } else {
        QCOMPARE(r.status, 429);
        QVERIFY(std::stoi(r.headers.at("retry-after")) >= 1);
        ++busy;
      }
    }
    QCOMPARE(ok, capacity);
    QCOMPARE(busy, kClients - capacity);
    std::sort(order.begin(), order.end());
    for (size_t i = 1; i < order.size(); ++i) QVERIFY(order[i].second > order[i - 1].second);  // FIFO
  }
}

// Anthropic's Messages API: thinking, text and tool_use blocks; a tool_result goes back to the
// model as K3's tool message; streamed as typed events.
void TestServeScripted::messages_api_round_trip() {
  ScriptedServer s([](serve::ServerOptions&, ScriptedEngine& e) {
    e.on("weather in Paris", kCallReply);
    e.on("role=\"tool\"", kAnswerReply);
  });
  const json tools = json::array(
      {{{"name", "get_weather"}, {"description", "Weather"}, {"input_schema", kTools[0]["function"]["parameters"]}},
       {{"name", "get_time"}, {"input_schema", kTools[1]["function"]["parameters"]}}});
  json b = {{"model", "kimi-k3"},
            {"max_tokens", 300},
            {"temperature", 0},
            {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}},
            {"tools", tools},
            {"system", "Be brief."},
            {"messages", json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}})}};
  const HttpReply r = post_json(s.port, "/v1/messages", b);
  QCOMPARE(r.status, 200);
  const json m = r.json();
  QCOMPARE(m["type"], json("message"));
  QCOMPARE(m["stop_reason"], json("tool_use"));
  QCOMPARE(m["content"][0]["type"], json("thinking"));
  QCOMPARE(m["content"][0]["thinking"], json("Need the forecast."));
  QCOMPARE(m["content"][1], json({{"type", "text"}, {"text", "Let me look."}}));
  QCOMPARE(m["content"][2]["type"], json("tool_use"));
  QCOMPARE(m["content"][2]["input"], json({{"city", "Paris \"centre\""}, {"days", 3}}));
  QCOMPARE(m["content"][3]["name"], json("get_time"));
  QVERIFY(s.engine->last_prompt_text().find("<|open|>message role=\"system\"<|sep|>Be brief.") != std::string::npos);

  json next = b;
  next["messages"].push_back({{"role", "assistant"}, {"content", m["content"]}});
  next["messages"].push_back(
      {{"role", "user"},
       {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", m["content"][3]["id"]}, {"content", "14:05"}},
                                {{"type", "tool_result"},
                                 {"tool_use_id", m["content"][2]["id"]},
                                 {"content", json::array({{{"type", "text"}, {"text", "21C, sunny"}}})}}})}});
  next["stream"] = true;
  const HttpReply st = post_json(s.port, "/v1/messages", next);
  QCOMPARE(st.status, 200);
  std::string text;
  std::vector<std::string> types;
  for (const std::string& d : st.sse_data()) {
    const json ev = json::parse(d);
    types.push_back(ev["type"]);
    if (ev["type"] == "content_block_delta" && ev["delta"]["type"] == "text_delta")
      text += ev["delta"]["text"].get<std::string>();
    if (ev["type"] == "message_delta") QCOMPARE(ev["delta"]["stop_reason"], json("end_turn"));
  }
  QCOMPARE(text, std::string("Sunny, 21 degrees at 14:05."));
  QCOMPARE(types.front(), std::string("message_start"));
  QCOMPARE(types.back(), std::string("message_stop"));
  QVERIFY(s.engine->last_prompt_text().find(
              "<|open|>message role=\"tool\" tool=\"get_weather\" index=\"1\"<|sep|>21C, sunny") != std::string::npos);
  // Anthropic-shaped errors.
  const HttpReply bad = post_json(s.port, "/v1/messages", {{"model", kModel}, {"messages", json::array()}});
  QCOMPARE(bad.status, 400);
  QCOMPARE(bad.json()["type"], json("error"));
  QCOMPARE(bad.json()["error"]["type"], json("invalid_request_error"));
}

// The Responses API: function_call items out, function_call_output items back in.
void TestServeScripted::responses_api_round_trip() {
  ScriptedServer s([](serve::ServerOptions&, ScriptedEngine& e) {
    e.on("weather in Paris", kCallReply);
    e.on("role=\"tool\"", kAnswerReply);
  });
  json tools = json::array();
  for (const json& t : kTools)
    tools.push_back(
        {{"type", "function"}, {"name", t["function"]["name"]}, {"parameters", t["function"]["parameters"]}});
  json b = {{"model", kModel},
            {"input", "What is the weather in Paris?"},
            {"tools", tools},
            {"instructions", "Be brief."},
            {"reasoning", {{"effort", "medium"}}},
            {"store", false},
            {"temperature", 0}};
  const HttpReply r = post_json(s.port, "/v1/responses", b);
  QCOMPARE(r.status, 200);
  const json out = r.json();
  QCOMPARE(out["object"], json("response"));
  QCOMPARE(out["status"], json("completed"));
  std::vector<std::string> types;
  json calls = json::array();
  for (const json& item : out["output"]) {
    types.push_back(item["type"]);
    if (item["type"] == "function_call") calls.push_back(item);
  }
  QCOMPARE(types, (std::vector<std::string>{"reasoning", "message", "function_call", "function_call"}));
  QCOMPARE(json::parse(calls[0]["arguments"].get<std::string>()), json({{"city", "Paris \"centre\""}, {"days", 3}}));
  QVERIFY(s.engine->last_prompt_text().find("type=\"thinking-effort\"") != std::string::npos);  // medium -> high

  json input = json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}});
  for (const json& item : out["output"]) input.push_back(item);
  input.push_back({{"type", "function_call_output"}, {"call_id", calls[1]["call_id"]}, {"output", "14:05"}});
  input.push_back({{"type", "function_call_output"}, {"call_id", calls[0]["call_id"]}, {"output", "21C, sunny"}});
  json next = b;
  next["input"] = input;
  next["stream"] = true;
  const HttpReply st = post_json(s.port, "/v1/responses", next);
  QCOMPARE(st.status, 200);
  std::string text;
  json completed;
  for (const std::string& d : st.sse_data()) {
    const json ev = json::parse(d);
    if (ev["type"] == "response.output_text.delta") text += ev["delta"].get<std::string>();
    if (ev["type"] == "response.completed") completed = ev["response"];
  }
  QCOMPARE(text, std::string("Sunny, 21 degrees at 14:05."));
  QCOMPARE(completed["output_text"], json(text));
  // The history went back as K3 renders it: reasoning kept, calls in order, results in call order.
  const std::string prompt = s.engine->last_prompt_text();
  QVERIFY(prompt.find("<|open|>think<|sep|>Need the forecast.<|close|>think<|sep|><|open|>response<|sep|>Let me "
                      "look.<|close|>response<|sep|><|open|>tools<|sep|>") != std::string::npos);
  QVERIFY(prompt.find(
              "tool=\"get_weather\" index=\"1\"<|sep|>21C, sunny<|close|>message<|sep|><|end_of_msg|><|open|>message "
              "role=\"tool\" tool=\"get_time\" index=\"2\"<|sep|>14:05") != std::string::npos);
  const HttpReply stored =
      post_json(s.port, "/v1/responses", {{"model", kModel}, {"input", "x"}, {"previous_response_id", "resp_1"}});
  QCOMPARE(stored.status, 400);
  QCOMPARE(stored.json()["error"]["param"], json("previous_response_id"));
}

void TestServeScripted::model_names_and_refusals() {
  ScriptedServer s([](serve::ServerOptions& o, ScriptedEngine&) { o.model_aliases.push_back("my-name"); });
  const json models = http_request(s.port, "GET", "/v1/models").json();
  std::vector<std::string> ids;
  for (const json& m : models["data"]) ids.push_back(m["id"]);
  QCOMPARE(ids, (std::vector<std::string>{kModel, "kimi-k3", "my-name"}));
  QCOMPARE(http_request(s.port, "GET", "/v1/models/my-name").status, 200);
  const HttpReply missing =
      post_json(s.port, "/v1/chat/completions",
                {{"model", "gpt-4"}, {"messages", json::array({{{"role", "user"}, {"content", "x"}}})}});
  QCOMPARE(missing.status, 404);
  const std::string msg = missing.json()["error"]["message"];
  QVERIFY2(msg.find("'k3-tiny', 'kimi-k3', 'my-name'") != std::string::npos, msg.c_str());
  const HttpReply named = post_json(s.port, "/v1/chat/completions",
                                    {{"model", kModel},
                                     {"messages", json::array({{{"role", "user"}, {"content", "x"}}})},
                                     {"tools", kTools},
                                     {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}});
  QCOMPARE(named.status, 400);
  QCOMPARE(named.json()["error"]["param"], json("tool_choice"));
  const HttpReply orphan =
      post_json(s.port, "/v1/chat/completions",
                {{"model", kModel}, {"messages", json::array({{{"role", "tool"}, {"content", "x"}}})}});
  QCOMPARE(orphan.status, 400);
}

// The official openai npm client: tools -> tool_calls -> tool results -> answer, streamed and
// not, with logprobs and response_format (tests/node-serve/openai_tools_check.mjs).
void TestServeScripted::openai_client_tool_round_trip() {
  const std::string tools = source_dir() + "/tests/node-serve";
  const std::string node = QStandardPaths::findExecutable("node").toStdString();
  if (node.empty()) QSKIP("node is not installed: the openai client tests need it");
  if (!std::filesystem::exists(tools + "/node_modules/openai/package.json"))
    QSKIP(
        "the openai npm package is not installed (run `npm ci --prefix tests/node-serve`; npm may have been "
        "unreachable)");
  ScriptedServer s([](serve::ServerOptions& o, ScriptedEngine& e) {
    o.api_key = "k-test";
    e.on("weather in Paris", kCallReply);
    e.on("role=\"tool\"", kAnswerReply);
    e.on("Reply in JSON", "{\"ok\": true}<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>");
  });
  const std::string base = "http://127.0.0.1:" + std::to_string(s.port) + "/v1";
  const RunResult r = run_process({node, tools + "/openai_tools_check.mjs", base, kModel, "k-test"}, 120000);
  QVERIFY2(r.code == 0, (r.out + r.err).c_str());
  const json j = json::parse(r.out, nullptr, false);
  QVERIFY2(j.is_object(), r.out.c_str());
  for (const char* mode : {"plain", "stream"}) {
    const json& m = j[mode];
    QCOMPARE(m["first_finish"], json("tool_calls"));
    QCOMPARE(m["calls"], json::array({json::array({"get_weather", json({{"city", "Paris \"centre\""}, {"days", 3}})}),
                                      json::array({"get_time", json({{"tz", "CET"}})})}));
    QCOMPARE(m["answer"], json("Sunny, 21 degrees at 14:05."));
    QCOMPARE(m["final_finish"], json("stop"));
    QVERIFY(m["logprob_tokens"].get<int>() > 0);
    QVERIFY(m["logprobs_ok"].get<bool>());
  }
  QCOMPARE(j["plain"]["reasoning"], json("Need the forecast."));
  QCOMPARE(j["json_mode"], json({{"ok", true}}));
}

QTEST_GUILESS_MAIN(TestServeScripted)
#include "test_serve_scripted.moc"
