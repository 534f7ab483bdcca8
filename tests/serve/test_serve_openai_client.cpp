// The official openai npm client against `deltafin serve`: chat and completions, streamed and not,
// reasoning_content, usage, models, and refusals surfacing as the client's own errors. Skips, saying
// why, when node or `npm ci --prefix tests/node-serve` is missing.
#include <QtTest/QtTest>

#include <filesystem>

#include "serve_test_support.h"
#include "support/test_support.h"

using namespace deltafin::test;
using nlohmann::json;

class TestServeOpenAiClient : public QObject {
  Q_OBJECT

 private slots:
  void openai_client_round_trips() {
    const std::string tools = source_dir() + "/tests/node-serve";
    const std::string node = QStandardPaths::findExecutable("node").toStdString();
    if (node.empty()) DELTAFIN_SKIP_UNLESS_CI("node is not installed: the openai client tests need it");
    if (!std::filesystem::exists(tools + "/node_modules/openai/package.json"))
      DELTAFIN_SKIP_UNLESS_CI(
          "the openai npm package is not installed (run `npm ci --prefix tests/node-serve`; npm may have been "
          "unreachable)");

    // No memo: the streamed runs must generate, not replay.
    ServerProcess s({"--model-root", demo_model_dir(), "--no-snapshots", "--api-key", "k-test", "--memo-entries", "0"});
    QVERIFY2(s.ok(), s.output().c_str());
    const std::string base = "http://127.0.0.1:" + std::to_string(s.port()) + "/v1";
    const RunResult r = run_process({node, tools + "/openai_client_check.mjs", base, "demo-model", "k-test"}, 300000);
    QVERIFY2(r.code == 0, (r.out + r.err).c_str());
    const json j = json::parse(r.out, nullptr, false);
    QVERIFY2(j.is_object(), r.out.c_str());

    QCOMPARE(j["chat"]["object"], json("chat.completion"));
    QCOMPARE(j["chat"]["role"], json("assistant"));
    QVERIFY(j["chat"]["usage"]["completion_tokens"].get<int>() > 0);
    // Streamed and not, greedy: the same text, the same usage.
    QCOMPARE(j["chat_stream"]["content"], j["chat"]["content"]);
    QCOMPARE(j["chat_stream"]["finish_reason"], j["chat"]["finish_reason"]);
    QCOMPARE(j["chat_stream"]["role"], json("assistant"));
    QCOMPARE(j["chat_stream"]["usage"]["completion_tokens"], j["chat"]["usage"]["completion_tokens"]);
    QVERIFY(j["chat_stream"]["chunks"].get<int>() >= 3);

    QVERIFY(j["chat_reasoning"]["reasoning_content"].is_string());
    QVERIFY(!j["chat_reasoning"]["reasoning_content"].get<std::string>().empty());
    QVERIFY(j["chat_reasoning"]["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>() > 0);

    QCOMPARE(j["completion"]["object"], json("text_completion"));
    QCOMPARE(j["completion_stream"]["text"], j["completion"]["text"]);  // seeded sampling is exact
    QCOMPARE(j["completion_stream"]["usage"]["completion_tokens"], j["completion"]["usage"]["completion_tokens"]);
    QCOMPARE(j["models"], json::array({"demo-model", "kimi-k3"}));

    QCOMPARE(j["tools_error"]["status"], json(400));
    QCOMPARE(j["tools_error"]["param"], json("tool_choice"));
    QCOMPARE(j["model_error"]["status"], json(404));
    QCOMPARE(j["model_error"]["code"], json("model_not_found"));
  }
};

QTEST_GUILESS_MAIN(TestServeOpenAiClient)
#include "test_serve_openai_client.moc"
