// The streaming parser splits generated ids into reasoning and answer, drops structure, holds
// partial characters back, and stops at the end marker.
#include "base/error.h"
#include "support/test_support.h"
#include "tokenizer/chat_stream_parser.h"
#include "tokenizer/utf8.h"

using namespace deltafin;

namespace {

struct Collected {
  std::string reasoning, answer;
  std::vector<std::string> tags;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  int ends = 0;
  size_t ids_used = 0;
};

void collect(const std::vector<ChatEvent>& events, Collected& c) {
  for (const auto& e : events) {
    if (e.kind != ChatEvent::Kind::End && !utf8::is_valid(e.text)) qFatal("event text is not valid UTF-8");
    switch (e.kind) {
      case ChatEvent::Kind::Reasoning:
        c.reasoning += e.text;
        break;
      case ChatEvent::Kind::Answer:
        c.answer += e.text;
        break;
      case ChatEvent::Kind::Tag:
        c.tags.push_back(e.text);
        break;
      case ChatEvent::Kind::ToolCall:
        c.calls.emplace_back(e.text, e.arguments);
        break;
      case ChatEvent::Kind::End:
        ++c.ends;
        break;
    }
  }
}

}  // namespace

class TestChatStreamParser : public QObject {
  Q_OBJECT
  std::unique_ptr<Tokenizer> tok_;

  // Feeds the ids of `generated` (special spellings allowed) one by one, stopping at done().
  Collected run(const std::string& generated, bool thinking, bool call_finish = false) {
    ChatStreamParser parser(*tok_, thinking);
    Collected c;
    for (int32_t id : tok_->encode(generated, true)) {
      if (parser.done()) break;
      collect(parser.push(id), c);
      ++c.ids_used;
    }
    if (call_finish) collect(parser.finish(), c);
    return c;
  }

 private slots:
  void initTestCase() { tok_ = load_tokenizer(test::fixtures_dir() + "/k3-tiny"); }

  // K3-SPEC section 4: calls follow the response block; string values are raw, other types JSON,
  // and a json block carries the arguments whole. Each call comes out once it closes.
  void tool_calls_after_the_response() {
    const auto c = run(
        "Need data.<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|><|open|>tools<|sep|>"
        "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris \"centre\"<|close|>argument<|sep|>"
        "<|open|>argument key=\"days\" type=\"number\"<|sep|>3<|close|>argument<|sep|>"
        "<|open|>argument key=\"a&quot;b\" type=\"object\"<|sep|>{\"k\": [1, 2]}<|close|>argument<|sep|>"
        "<|open|>argument key=\"bad\" type=\"number\"<|sep|>three<|close|>argument<|sep|>"
        "<|close|>call<|sep|>"
        "<|open|>call tool=\"t&amp;z\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>{tz: "
        "CET<|close|>json<|sep|><|close|>call<|sep|>"
        "<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>",
        true);
    QCOMPARE(c.reasoning, std::string("Need data."));
    QCOMPARE(c.answer, std::string("Checking."));
    QCOMPARE(c.ends, 1);
    QVERIFY(c.tags.empty());
    QCOMPARE(c.calls.size(), size_t(2));
    QCOMPARE(c.calls[0].first, std::string("get_weather"));
    QCOMPARE(c.calls[0].second,
             std::string(R"({"city":"Paris \"centre\"","days":3,"a\"b":{"k":[1,2]},"bad":"three"})"));
    QCOMPARE(c.calls[1].first, std::string("t&z"));
    QCOMPARE(c.calls[1].second, std::string("{tz: CET"));
  }

  void a_call_cut_off_never_comes_out() {
    const auto c =
        run("<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>"
            "<|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>argument key=\"x\" type=\"string\"<|sep|>unfinished",
            true, /*call_finish=*/true);
    QVERIFY(c.calls.empty());
    QCOMPARE(c.answer, std::string());
  }

  void thinking_reply() {
    const std::string tail = "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";
    const auto c = run("Let me think: 2+2.<|close|>think<|sep|><|open|>response<|sep|>It is 4 \xF0\x9F\x98\x80." +
                           tail + "ignored after the end",
                       true);
    QCOMPARE(c.reasoning, std::string("Let me think: 2+2."));
    QCOMPARE(c.answer, std::string("It is 4 \xF0\x9F\x98\x80."));
    QCOMPARE(c.ends, 1);
    QVERIFY(c.tags.empty());
    QCOMPARE(
        c.ids_used,
        tok_->encode("Let me think: 2+2.<|close|>think<|sep|><|open|>response<|sep|>It is 4 \xF0\x9F\x98\x80." + tail,
                     true)
            .size());
  }

  void answer_only_reply() {
    const auto c = run("Hello there<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>", false);
    QCOMPARE(c.reasoning, std::string());
    QCOMPARE(c.answer, std::string("Hello there"));
    QCOMPARE(c.ends, 1);
  }

  void end_marker_alone_stops() {
    ChatStreamParser parser(*tok_, false);
    Collected c;
    collect(parser.push(tok_->encode("ok")[0]), c);
    QVERIFY(!parser.done());
    collect(parser.push(tok_->require_special_id("<|end_of_msg|>")), c);
    QVERIFY(parser.done());
    QCOMPARE(c.ends, 1);
    QVERIFY(parser.push(tok_->encode("x")[0]).empty());
    QVERIFY(parser.finish().empty());
  }

  void unknown_tags_are_reported_not_shown() {
    const auto c = run("A<|open|>tool_call name=\"f\"<|sep|>B<|close|>response<|sep|><|end_of_msg|>", false);
    QCOMPARE(c.answer, std::string("AB"));
    QCOMPARE(c.tags, std::vector<std::string>{"open tool_call name=\"f\""});
  }

  void cut_off_reply_is_flushed_by_finish() {
    // Stops inside a multi-byte character: finish shows what is left as U+FFFD, never broken bytes.
    std::string text = "partial \xE4\xB8\xAD";
    auto ids = tok_->encode(text);
    ChatStreamParser parser(*tok_, true);
    Collected c;
    for (size_t i = 0; i + 1 < ids.size(); ++i) collect(parser.push(ids[i]), c);
    collect(parser.finish(), c);
    QVERIFY(c.reasoning.starts_with("partial "));
    QVERIFY(c.reasoning.ends_with(std::string(utf8::kReplacement)));
    QCOMPARE(c.ends, 0);
    QVERIFY(!parser.done());
  }

  void runaway_tag_becomes_text() {
    std::string body(3000, 'y');
    const auto c = run("<|open|>" + body, false, true);
    QCOMPARE(c.answer.size(), body.size());
  }

  void bad_id_is_an_error() {
    ChatStreamParser parser(*tok_, true);
    QVERIFY_THROWS_EXCEPTION(Error, parser.push(int32_t(99999)));
  }
};

QTEST_GUILESS_MAIN(TestChatStreamParser)
#include "test_chat_stream_parser.moc"
