// `deltafin render-chat` against renderings of K3's XTML rules (K3-SPEC section 4, Moonshot's
// encoding_k3) written out by hand from the spec: tools, several calls, tool results in shuffled
// order, reasoning history, tool_choice, response formats, unicode and quotes. Each expected text
// is the literal prompt; the ids are checked to decode to it.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

using namespace deltafin;
using nlohmann::json;

namespace {

// The fixed texts of the spec, spelled once so the cases below stay readable.
const std::string B = "[BOS]";
const std::string GEN_THINK = R"(<|open|>message role="assistant"<|sep|><|open|>think<|sep|>)";
const std::string GEN_RESP = R"(<|open|>message role="assistant"<|sep|><|open|>response<|sep|>)";
const std::string END = "<|close|>message<|sep|><|end_of_msg|>";
const std::string TOOLS_HEAD =
    "<|open|>message role=\"system\" type=\"tool-declare\"<|sep|># Tools\nHere are the available tools, described in "
    "JSONSchema.\n\n```json\n";
const std::string FENCE = "\n```";
const std::string CHOICE_REQUIRED =
    "<|open|>message role=\"system\" type=\"tool-choice\"<|sep|>The system is invoked with "
    "`tool_choice=required`.\nYou MUST call tools in the next message." +
    END;
const std::string CHOICE_NONE =
    "<|open|>message role=\"system\" type=\"tool-choice\"<|sep|>The system is invoked with `tool_choice=none`.\nYou "
    "MUST NOT call any tools in the next message." +
    END;
const std::string RAW_JSON =
    "Your response must be raw JSON data without markdown code blocks (```json) or any additional formatting.";
std::string effort(const std::string& level) {
  return "<|open|>message role=\"system\" type=\"thinking-effort\"<|sep|>`thinking_effort` guides on how much to think "
         "in your "
         "thinking channel (not including the response channel), supported values include `low`, `medium`, `high`, and "
         "`max`.\nNow the system is invoked with `thinking_effort=" +
         level + "`." + END;
}
std::string user(const std::string& text) { return "<|open|>message role=\"user\"<|sep|>" + text + END; }

const json WEATHER_TOOL =
    json::parse(R"({"type":"function","function":{"name":"get_weather","description":"Weather now",
  "parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}}})");
const std::string WEATHER_JSON =
    R"([{"function":{"description":"Weather now","name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}},"type":"function"}])";

struct Case {
  const char* name;
  json request;
  std::string expected;
};

json msgs(std::initializer_list<json> m) {
  json all = json::array();
  for (const json& x : m) all.push_back(x);
  return json{{"model", "any"}, {"messages", all}};
}
json with(json r, const json& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) r[it.key()] = it.value();
  return r;
}
json call(const std::string& id, const std::string& name, const std::string& args) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
}

std::vector<Case> cases() {
  const json u = {{"role", "user"}, {"content", "What is the weather in Paris?"}};
  const std::string U = user("What is the weather in Paris?");
  std::vector<Case> c;
  c.push_back({"plain_thinking", msgs({u}), B + U + GEN_THINK});
  c.push_back({"no_thinking", with(msgs({u}), {{"reasoning_effort", "none"}}), B + U + GEN_RESP});
  c.push_back({"effort_high", with(msgs({u}), {{"reasoning_effort", "high"}}), B + effort("high") + U + GEN_THINK});
  c.push_back({"tools_sorted_compact", with(msgs({u}), {{"tools", json::array({WEATHER_TOOL})}}),
               B + TOOLS_HEAD + WEATHER_JSON + FENCE + END + U + GEN_THINK});
  c.push_back({"tools_then_effort",
               with(msgs({u}), {{"tools", json::array({WEATHER_TOOL})}, {"reasoning_effort", "low"}}),
               B + TOOLS_HEAD + WEATHER_JSON + FENCE + END + effort("low") + U + GEN_THINK});
  c.push_back(
      {"tools_unicode_and_quotes",
       with(
           msgs({u}),
           {{"tools",
             json::parse(
                 R"([{"type":"function","function":{"name":"m\u00e9t\u00e9o","description":"Le \"temps\" \u5929\u6c17"}}])")}}),
       B + TOOLS_HEAD +
           "[{\"function\":{\"description\":\"Le \\\"temps\\\" "
           "\xe5\xa4\xa9\xe6\xb0\x97\",\"name\":\"m\xc3\xa9t\xc3\xa9o\"},\"type\":\"function\"}]" +
           FENCE + END + U + GEN_THINK});
  c.push_back({"call_and_result_with_reasoning",
               with(msgs({u,
                          {{"role", "assistant"},
                           {"content", "Looking."},
                           {"reasoning_content", "Need the tool."},
                           {"tool_calls", json::array({call("c1", "get_weather", R"({"city":"Paris"})")})}},
                          {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "21C"}}}),
                    {{"tools", json::array({WEATHER_TOOL})}}),
               B + TOOLS_HEAD + WEATHER_JSON + FENCE + END + U +
                   "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>Need the tool.<|close|>think<|sep|>"
                   "<|open|>response<|sep|>Looking.<|close|>response<|sep|><|open|>tools<|sep|>"
                   "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" "
                   "type=\"string\"<|sep|>Paris"
                   "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>" +
                   END + "<|open|>message role=\"tool\" tool=\"get_weather\" index=\"1\"<|sep|>21C" + END + GEN_THINK});
  c.push_back({"two_calls_results_shuffled",
               with(msgs({u,
                          {{"role", "assistant"},
                           {"content", ""},
                           {"tool_calls", json::array({call("a", "get_weather", R"({"city":"Paris"})"),
                                                       call("b", "get_time", R"({"tz":"CET"})")})}},
                          {{"role", "tool"}, {"tool_call_id", "b"}, {"content", "14:05"}},
                          {{"role", "tool"}, {"tool_call_id", "a"}, {"content", "21C"}}}),
                    {{"reasoning_effort", "none"}}),
               B + U +
                   "<|open|>message "
                   "role=\"assistant\"<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>"
                   "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" "
                   "type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|>"
                   "<|open|>call tool=\"get_time\" index=\"2\"<|sep|><|open|>argument key=\"tz\" "
                   "type=\"string\"<|sep|>CET<|close|>argument<|sep|><|close|>call<|sep|>"
                   "<|close|>tools<|sep|>" +
                   END + "<|open|>message role=\"tool\" tool=\"get_weather\" index=\"1\"<|sep|>21C" + END +
                   "<|open|>message role=\"tool\" tool=\"get_time\" index=\"2\"<|sep|>14:05" + END + GEN_RESP});
  c.push_back({"empty_reasoning_keeps_empty_think",
               msgs({{{"role", "user"}, {"content", "Hi"}},
                     {{"role", "assistant"}, {"content", "Hello!"}},
                     {{"role", "user"}, {"content", "Bye"}}}),
               B + user("Hi") +
                   "<|open|>message "
                   "role=\"assistant\"<|sep|><|open|>think<|sep|><|close|>think<|sep|><|open|>response<|sep|>Hello!<|"
                   "close|>response<|sep|>" +
                   END + user("Bye") + GEN_THINK});
  c.push_back({"blank_reasoning_is_empty",
               msgs({{{"role", "user"}, {"content", "Hi"}},
                     {{"role", "assistant"}, {"content", "Hello!"}, {"reasoning_content", " \n "}},
                     {{"role", "user"}, {"content", "Bye"}}}),
               B + user("Hi") +
                   "<|open|>message "
                   "role=\"assistant\"<|sep|><|open|>think<|sep|><|close|>think<|sep|><|open|>response<|sep|>Hello!<|"
                   "close|>response<|sep|>" +
                   END + user("Bye") + GEN_THINK});
  c.push_back({"no_thinking_drops_history_reasoning",
               with(msgs({{{"role", "user"}, {"content", "Hi"}},
                          {{"role", "assistant"}, {"content", "Hello!"}, {"reasoning_content", "Greet back."}},
                          {{"role", "user"}, {"content", "Bye"}}}),
                    {{"reasoning_effort", "none"}}),
               B + user("Hi") +
                   "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>Hello!<|close|>response<|sep|>" +
                   END + user("Bye") + GEN_RESP});
  c.push_back({"tool_choice_required",
               with(msgs({u}), {{"tools", json::array({WEATHER_TOOL})}, {"tool_choice", "required"}}),
               B + TOOLS_HEAD + WEATHER_JSON + FENCE + END + U + CHOICE_REQUIRED + GEN_THINK});
  c.push_back({"tool_choice_none", with(msgs({u}), {{"tools", json::array({WEATHER_TOOL})}, {"tool_choice", "none"}}),
               B + TOOLS_HEAD + WEATHER_JSON + FENCE + END + U + CHOICE_NONE + GEN_THINK});
  c.push_back({"tool_choice_auto_renders_nothing", with(msgs({u}), {{"tool_choice", "auto"}}), B + U + GEN_THINK});
  c.push_back({"response_format_json_object", with(msgs({u}), {{"response_format", {{"type", "json_object"}}}}),
               B + U +
                   "<|open|>message role=\"system\" type=\"response-format\"<|sep|>The system is invoked with "
                   "`response_format=json_object`.\n" +
                   RAW_JSON + END + GEN_THINK});
  c.push_back(
      {"response_format_json_schema_sorted",
       with(
           msgs({u}),
           {{"response_format",
             json::parse(
                 R"({"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}}})")}}),
       B + U +
           "<|open|>message role=\"system\" type=\"response-format\"<|sep|>The system is invoked with "
           "`response_format=json_schema`.\n" +
           RAW_JSON +
           "\nThe JSON data must match the following "
           "schema:\n```json\n{\"properties\":{\"temp\":{\"type\":\"number\"}},\"required\":[\"temp\"],\"type\":"
           "\"object\"}\n```" +
           END + GEN_THINK});
  c.push_back({"order_tools_effort_conversation_choice_format",
               with(msgs({u}), {{"tools", json::array({WEATHER_TOOL})},
                                {"reasoning_effort", "max"},
                                {"tool_choice", "required"},
                                {"response_format", {{"type", "json_object"}}}}),
               B + TOOLS_HEAD + WEATHER_JSON + FENCE + END + effort("max") + U + CHOICE_REQUIRED +
                   "<|open|>message role=\"system\" type=\"response-format\"<|sep|>The system is invoked with "
                   "`response_format=json_object`.\n" +
                   RAW_JSON + END + GEN_THINK});
  c.push_back(
      {"argument_types_in_order",
       with(
           msgs(
               {u,
                {{"role", "assistant"},
                 {"content", nullptr},
                 {"tool_calls",
                  json::array({call(
                      "x", "f",
                      R"({"z": 1, "a": "x \"q\"", "b": true, "n": null, "o": {"k": [1,2]}, "arr": [1,"two"], "f": 1.5, "q\"k": "\u00e9"})")})}}}),
           {{"reasoning_effort", "none"}}),
       B + U +
           "<|open|>message "
           "role=\"assistant\"<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|><|open|>call "
           "tool=\"f\" index=\"1\"<|sep|>"
           "<|open|>argument key=\"z\" type=\"number\"<|sep|>1<|close|>argument<|sep|>"
           "<|open|>argument key=\"a\" type=\"string\"<|sep|>x \"q\"<|close|>argument<|sep|>"
           "<|open|>argument key=\"b\" type=\"boolean\"<|sep|>true<|close|>argument<|sep|>"
           "<|open|>argument key=\"n\" type=\"null\"<|sep|>null<|close|>argument<|sep|>"
           "<|open|>argument key=\"o\" type=\"object\"<|sep|>{\"k\": [1, 2]}<|close|>argument<|sep|>"
           "<|open|>argument key=\"arr\" type=\"array\"<|sep|>[1, \"two\"]<|close|>argument<|sep|>"
           "<|open|>argument key=\"f\" type=\"number\"<|sep|>1.5<|close|>argument<|sep|>"
           "<|open|>argument key=\"q&quot;k\" type=\"string\"<|sep|>\xc3\xa9<|close|>argument<|sep|>"
           "<|close|>call<|sep|><|close|>tools<|sep|>" +
           END + GEN_RESP});
  c.push_back({"unparseable_arguments_raw_json_block",
               with(msgs({u,
                          {{"role", "assistant"},
                           {"content", "ok"},
                           {"tool_calls", json::array({call("x", "f", "{city: Paris")})}}}),
                    {{"reasoning_effort", "none"}}),
               B + U +
                   "<|open|>message "
                   "role=\"assistant\"<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|><|open|>tools<|sep|><|"
                   "open|>call tool=\"f\" index=\"1\"<|sep|>"
                   "<|open|>json type=\"object\"<|sep|>{city: "
                   "Paris<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|>" +
                   END + GEN_RESP});
  c.push_back(
      {"empty_arguments_no_argument_tags",
       with(msgs({u, {{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array({call("x", "now", "")})}}}),
            {{"reasoning_effort", "none"}}),
       B + U +
           "<|open|>message "
           "role=\"assistant\"<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|><|open|>call "
           "tool=\"now\" index=\"1\"<|sep|>"
           "<|close|>call<|sep|><|close|>tools<|sep|>" +
           END + GEN_RESP});
  c.push_back({"tool_names_by_name_or_position_index_resets",
               with(msgs({u,
                          {{"role", "assistant"},
                           {"content", ""},
                           {"tool_calls", json::array({call("", "get_weather", "{}"), call("", "get_time", "{}")})}},
                          {{"role", "tool"}, {"content", "21C"}},
                          {{"role", "tool"}, {"name", "clock"}, {"content", "14:05"}},
                          {{"role", "assistant"}, {"content", "Done."}},
                          {{"role", "tool"}, {"name", "late"}, {"content", "x"}}}),
                    {{"reasoning_effort", "none"}}),
               B + U +
                   "<|open|>message "
                   "role=\"assistant\"<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>"
                   "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|close|>call<|sep|><|open|>call "
                   "tool=\"get_time\" index=\"2\"<|sep|><|close|>call<|sep|>"
                   "<|close|>tools<|sep|>" +
                   END + "<|open|>message role=\"tool\" tool=\"get_weather\" index=\"1\"<|sep|>21C" + END +
                   "<|open|>message role=\"tool\" tool=\"clock\" index=\"2\"<|sep|>14:05" + END +
                   "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>Done.<|close|>response<|sep|>" +
                   END + "<|open|>message role=\"tool\" tool=\"late\" index=\"1\"<|sep|>x" + END + GEN_RESP});
  c.push_back({"names_escaped_and_specials_stay_text",
               msgs({{{"role", "system"}, {"name", "a\"b&c"}, {"content", "Be <|sep|> careful"}},
                     {{"role", "user"}, {"name", "&quot;"}, {"content", "[EOS]?"}}}),
               B + "<|open|>message role=\"system\" name=\"a&quot;b&amp;c\"<|sep|>Be <|sep|> careful" + END +
                   "<|open|>message role=\"user\" name=\"&amp;quot;\"<|sep|>[EOS]?" + END + GEN_THINK});
  c.push_back({"new_tools_mid_conversation",
               msgs({u,
                     {{"role", "system"}, {"tools", json::array({WEATHER_TOOL})}},
                     {{"role", "user"}, {"content", "And now?"}}}),
               B + U +
                   "<|open|>message role=\"system\" type=\"tool-declare\"<|sep|>## New Tools Available\nThe system "
                   "dynamically extends the toolset via lazy-loading.\n"
                   "You have access to all existing and extended tools.\nHere are the specs for the extended "
                   "tools.\n\n```json\n" +
                   WEATHER_JSON + FENCE + END + user("And now?") + GEN_THINK});
  c.push_back({"developer_role_and_content_parts",
               msgs({{{"role", "developer"},
                      {"content", json::array({{{"type", "text"}, {"text", "Rule 1. "}},
                                               {{"type", "text"}, {"text", "Rule 2."}}})}},
                     u}),
               B + "<|open|>message role=\"system\"<|sep|>Rule 1. Rule 2." + END + U + GEN_THINK});
  return c;
}

}  // namespace

class TestRenderChat : public QObject {
  Q_OBJECT
  std::string exe_, k3_, dir_;
  std::unique_ptr<Tokenizer> tok_;

  test::RunResult render(const json& request, const std::string& name, bool text) {
    const std::string path = dir_ + "/" + name + ".json";
    std::ofstream(path) << request.dump();
    std::vector<std::string> argv = {exe_, "render-chat", "--json", path, "--model-root", k3_};
    if (text) argv.push_back("--text");
    return test::run_process(argv);
  }

 private slots:
  void initTestCase() {
    exe_ = test::bin_dir() + "/deltafin";
    k3_ = test::fixtures_dir() + "/k3-tiny";
    QVERIFY2(std::filesystem::exists(exe_), exe_.c_str());
    tok_ = load_tokenizer(k3_);
    dir_ =
        QDir::tempPath().toStdString() + "/deltafin-render-chat-" + std::to_string(QCoreApplication::applicationPid());
    std::filesystem::create_directories(dir_);
  }
  void cleanupTestCase() { std::filesystem::remove_all(dir_); }

  void renders_equal_the_spec() {
    const auto all = cases();
    QVERIFY(all.size() >= 20);
    for (const Case& c : all) {
      const auto t = render(c.request, c.name, true);
      QVERIFY2(t.code == 0, (std::string(c.name) + ": " + t.err).c_str());
      QVERIFY2(t.out == c.expected + "\n",
               (std::string(c.name) + ":\n got  " + t.out + "\n want " + c.expected).c_str());
      // The ids decode to the same text, and only structure is special.
      const auto r = render(c.request, c.name, false);
      QVERIFY2(r.code == 0, r.err.c_str());
      const auto ids = json::parse(r.out).get<std::vector<int32_t>>();
      QCOMPARE(tok_->decode(ids) + "\n", t.out);
      size_t specials = 0;
      for (int32_t id : ids) specials += tok_->is_special(id);
      size_t spelled = 0;
      for (const std::string s : {"[BOS]", "<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"})
        for (size_t at = c.expected.find(s); at != std::string::npos; at = c.expected.find(s, at + 1)) ++spelled;
      if (std::string(c.name) == "names_escaped_and_specials_stay_text") --spelled;  // its "<|sep|>" is user text
      QCOMPARE(specials, spelled);
    }
  }

  void refusals_name_the_field() {
    const auto r = render(json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})},
                               {"tool_choice", {{"type", "function"}, {"function", {{"name", "f"}}}}}},
                          "named_choice", true);
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.find("tool_choice") != std::string::npos, r.err.c_str());
    const auto orphan =
        render(json{{"messages", json::array({{{"role", "tool"}, {"content", "x"}}})}}, "orphan_tool", true);
    QVERIFY(orphan.code != 0);
    QVERIFY2(orphan.err.find("tool result 1") != std::string::npos, orphan.err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestRenderChat)
#include "test_render_chat.moc"
