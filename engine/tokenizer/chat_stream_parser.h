#pragma once
// Splits the ids K3 generates after a render_chat prompt into reasoning, answer text and tool
// calls, and says when the reply is over.
//
//   deltafin::ChatStreamParser parser(*tokenizer, /*thinking=*/true);
//   for (int32_t id : generated) {
//     for (const auto& ev : parser.push(id)) {
//       if (ev.kind == deltafin::ChatEvent::Kind::Answer) print(ev.text);
//       else if (ev.kind == deltafin::ChatEvent::Kind::Reasoning) log(ev.text);
//     }
//     if (parser.done()) break;   // <|end_of_msg|> (or [EOS]) was generated: stop decoding
//   }
//   for (const auto& ev : parser.finish()) ...   // when generation stopped for another reason
//
// Text events hold complete UTF-8 only. Structural tags are never part of the text. Tool calls
// (after the response block: <|open|>tools, then per call <|open|>call tool=".." index=".."
// with <|open|>argument key=".." type=".."<|sep|>VALUE<|close|>argument or one
// <|open|>json type="object"<|sep|>RAW<|close|>json) come out as one ToolCall event per call
// once its <|close|>call arrives; a call cut off by the length limit never comes out.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace deltafin {

struct ChatEvent {
  enum class Kind {
    Reasoning,  // text inside <|open|>think ... <|close|>think
    Answer,     // text inside <|open|>response ... <|close|>response
    ToolCall,   // a complete call: the tool's name in `text`, its arguments (JSON text) in `arguments`
    Tag,        // a structural tag the parser does not act on (its name and attributes in `text`)
    End,        // the end marker: nothing follows
  };
  ChatEvent(Kind kind_, std::string text_, std::string arguments_ = {})
      : kind(kind_), text(std::move(text_)), arguments(std::move(arguments_)) {}
  Kind kind;
  std::string text;
  std::string arguments;
};

class ChatStreamParser {
 public:
  // `thinking`: whether the prompt ended with <|open|>think (else with <|open|>response).
  ChatStreamParser(const Tokenizer& tokenizer, bool thinking);

  std::vector<ChatEvent> push(int32_t id);
  // Generation stopped without the end marker (length limit, cancel): flush held-back text.
  std::vector<ChatEvent> finish();

  enum class Phase { Reasoning, Answer, AfterAnswer, Done };
  Phase phase() const { return phase_; }
  bool done() const { return phase_ == Phase::Done; }
  // Between <|open|>/<|close|> and <|sep|>: the next id is part of a tag, not of any text.
  bool in_tag() const { return tag_opening_.has_value(); }

 private:
  void flush(std::vector<ChatEvent>& events);
  void emit_text(std::string text, std::vector<ChatEvent>& events);
  void on_tag(bool opening, const std::string& body, std::vector<ChatEvent>& events);
  void on_tool_tag(bool opening, const std::string& name, const std::string& body, std::vector<ChatEvent>& events);

  const Tokenizer& tokenizer_;
  int32_t open_, close_, sep_, end_of_msg_;
  std::optional<int32_t> eos_;
  Phase phase_;
  IncrementalDecoder decoder_;
  // A tag being read: set after <|open|>/<|close|>, until <|sep|>.
  std::optional<bool> tag_opening_;
  std::string tag_body_;
  // The tool call being read: its name, the arguments so far, and the value being captured
  // (the bytes between <|open|>argument/json and its close).
  struct PendingCall {
    std::string name;
    std::vector<std::pair<std::string, std::string>> arguments;  // key -> JSON value text
    std::optional<std::string> raw_json;
  };
  std::optional<PendingCall> call_;
  enum class Capture { None, Argument, Json };
  Capture capture_ = Capture::None;
  std::string capture_key_, capture_type_, capture_bytes_;
};

}  // namespace deltafin
