// Whole multi-turn conversations rendered, compared with literal expected text written by hand
// from K3-SPEC.md section 4 (never produced by the renderer): earlier assistant turns with their
// reasoning, without reasoning, with thinking off, and tool results. The id form is checked
// against the same literals: it decodes to them, and its special ids are exactly the structural
// pieces the literal spells.
#include <regex>

#include "support/test_support.h"
#include "tokenizer/chat_template.h"

using namespace deltafin;

namespace {

// The structural pieces of the spec's XTML, in the spelling the literals use.
const std::regex kSpecial(R"(\[BOS\]|<\|open\|>|<\|close\|>|<\|sep\|>|<\|end_of_msg\|>)");

ChatMessage assistant(std::string content, std::string reasoning) {
  return ChatMessage("assistant", std::move(content), "", std::move(reasoning));
}

ChatOptions options(bool thinking) {
  ChatOptions o;
  o.thinking = thinking;
  o.add_bos = false;  // the spec's renderings start at the first message
  return o;
}

}  // namespace

class TestChatRenderings : public QObject {
  Q_OBJECT
  std::unique_ptr<Tokenizer> tok_;

  // Text form equals the literal; the id form decodes to it and has a special id exactly where
  // the literal spells a structural piece.
  void expect(const std::vector<ChatMessage>& chat, const ChatOptions& opt, const std::string& want) {
    QCOMPARE(render_chat_text(chat, opt), want);
    const std::vector<int32_t> ids = render_chat(*tok_, chat, opt);
    QCOMPARE(tok_->decode(ids), want);
    std::vector<std::string> specials_in_ids, specials_in_want;
    for (int32_t id : ids)
      if (tok_->is_special(id)) specials_in_ids.push_back(tok_->decode(std::vector<int32_t>{id}));
    for (auto it = std::sregex_iterator(want.begin(), want.end(), kSpecial); it != std::sregex_iterator(); ++it)
      specials_in_want.push_back(it->str());
    QCOMPARE(specials_in_ids, specials_in_want);
  }

 private slots:
  void initTestCase() { tok_ = load_tokenizer(test::fixtures_dir() + "/k3-tiny"); }

  void reasoning_is_kept_for_every_earlier_turn() {
    const std::vector<ChatMessage> chat = {{"system", "You are terse."},       {"user", "What is 2+2?"},
                                           assistant("4", "Add two and two."), {"user", "And 3+3?"},
                                           assistant("6", "Three and three."), {"user", "Thanks!"}};
    expect(chat, options(true),
           "<|open|>message role=\"system\"<|sep|>You are terse.<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"user\"<|sep|>What is 2+2?<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"assistant\"<|sep|>"
           "<|open|>think<|sep|>Add two and two.<|close|>think<|sep|>"
           "<|open|>response<|sep|>4<|close|>response<|sep|>"
           "<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"user\"<|sep|>And 3+3?<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"assistant\"<|sep|>"
           "<|open|>think<|sep|>Three and three.<|close|>think<|sep|>"
           "<|open|>response<|sep|>6<|close|>response<|sep|>"
           "<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"user\"<|sep|>Thanks!<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>");
  }

  void thinking_off_without_reasoning_has_no_think_block() {
    const std::vector<ChatMessage> chat = {{"user", "Hi"}, assistant("Hello!", ""), {"user", "Bye"}};
    expect(chat, options(false),
           "<|open|>message role=\"user\"<|sep|>Hi<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>Hello!<|close|>response<|sep|>"
           "<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"user\"<|sep|>Bye<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>");
  }

  void completed_conversation_without_generation_prompt() {
    std::vector<ChatMessage> chat = {{"user", "Q"}, assistant("A", "R")};
    ChatOptions opt = options(true);
    opt.add_generation_prompt = false;
    expect(chat, opt,
           "<|open|>message role=\"user\"<|sep|>Q<|close|>message<|sep|><|end_of_msg|>"
           "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>R<|close|>think<|sep|>"
           "<|open|>response<|sep|>A<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>");
  }

  // Whatever its attributes, a tool result's body is its raw content: no think or response block.
  void tool_result_body_is_the_raw_content() {
    const std::vector<ChatMessage> chat = {{"tool", "{\"temp\": 21}", "get_weather"}};
    const std::string text = render_chat_text(chat, options(true));
    const std::string open = "<|open|>message role=\"tool\"";
    const std::string body =
        "<|sep|>{\"temp\": 21}<|close|>message<|sep|><|end_of_msg|>"
        "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>";
    QVERIFY2(text.starts_with(open), text.c_str());
    QVERIFY2(text.ends_with(body), text.c_str());
    // Between them only the attributes: one structural piece (the <|sep|> above) ends the tag.
    const std::string attributes = text.substr(open.size(), text.size() - open.size() - body.size());
    QVERIFY2(attributes.find("<|") == std::string::npos, attributes.c_str());
  }

  // The empty think block, reasoning dropped with thinking off, tool results named and indexed.
  void empty_reasoning_gives_an_empty_think_block_when_thinking() {
    const std::vector<ChatMessage> chat = {{"user", "Hi"}, assistant("Hello!", ""), {"user", "Bye"}};
    QCOMPARE(render_chat_text(chat, options(true)),
             std::string("<|open|>message role=\"user\"<|sep|>Hi<|close|>message<|sep|><|end_of_msg|>"
                         "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|><|close|>think<|sep|>"
                         "<|open|>response<|sep|>Hello!<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>"
                         "<|open|>message role=\"user\"<|sep|>Bye<|close|>message<|sep|><|end_of_msg|>"
                         "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>"));
  }

  void thinking_off_drops_earlier_reasoning() {
    const std::vector<ChatMessage> chat = {{"user", "Hi"}, assistant("Hello!", "Greet back."), {"user", "Bye"}};
    QCOMPARE(
        render_chat_text(chat, options(false)),
        std::string("<|open|>message role=\"user\"<|sep|>Hi<|close|>message<|sep|><|end_of_msg|>"
                    "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>Hello!<|close|>response<|sep|>"
                    "<|close|>message<|sep|><|end_of_msg|>"
                    "<|open|>message role=\"user\"<|sep|>Bye<|close|>message<|sep|><|end_of_msg|>"
                    "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>"));
  }

  void tool_results_are_named_and_indexed_per_assistant_turn() {
    const std::vector<ChatMessage> chat = {
        {"user", "Weather in Paris and Rome?"}, assistant("", ""), {"tool", "18", "get_weather"},
        {"tool", "24", "get_weather"},          assistant("", ""), {"tool", "ok", "log"}};
    ChatOptions opt = options(false);
    opt.add_generation_prompt = false;
    QCOMPARE(
        render_chat_text(chat, opt),
        std::string(
            "<|open|>message role=\"user\"<|sep|>Weather in Paris and Rome?<|close|>message<|sep|><|end_of_msg|>"
            "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|><|close|>response<|sep|>"
            "<|close|>message<|sep|><|end_of_msg|>"
            "<|open|>message role=\"tool\" tool=\"get_weather\" "
            "index=\"1\"<|sep|>18<|close|>message<|sep|><|end_of_msg|>"
            "<|open|>message role=\"tool\" tool=\"get_weather\" "
            "index=\"2\"<|sep|>24<|close|>message<|sep|><|end_of_msg|>"
            "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|><|close|>response<|sep|>"
            "<|close|>message<|sep|><|end_of_msg|>"
            "<|open|>message role=\"tool\" tool=\"log\" index=\"1\"<|sep|>ok<|close|>message<|sep|><|end_of_msg|>"));
  }
};

QTEST_GUILESS_MAIN(TestChatRenderings)
#include "test_chat_renderings.moc"
