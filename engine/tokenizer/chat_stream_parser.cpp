#include "tokenizer/chat_stream_parser.h"

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"
#include "tokenizer/utf8.h"

namespace deltafin {
namespace {

// A tag name with attributes is short; a longer run between <|open|> and <|sep|> is not a
// tag, and holding it would let a misbehaving model grow the buffer without bound.
constexpr size_t kMaxTagBytes = 1024;

std::string tag_name(const std::string& body) {
  const size_t end = body.find_first_of(" \t\r\n");
  return body.substr(0, end);
}

// The value of attribute `key` in a tag body `name key="value" ...` (unescaped); "" if absent.
std::string attribute(const std::string& body, std::string_view key) {
  size_t pos = body.find_first_of(" \t\r\n");
  while (pos != std::string::npos && pos < body.size()) {
    pos = body.find_first_not_of(" \t\r\n", pos);
    if (pos == std::string::npos) break;
    const size_t eq = body.find("=\"", pos);
    if (eq == std::string::npos) break;
    const size_t end = body.find('"', eq + 2);
    if (end == std::string::npos) break;
    if (std::string_view(body).substr(pos, eq - pos) == key)
      return unescape_xtml_attribute(body.substr(eq + 2, end - eq - 2));
    pos = end + 1;
  }
  return {};
}

}  // namespace

ChatStreamParser::ChatStreamParser(const Tokenizer& tokenizer, bool thinking)
    : tokenizer_(tokenizer),
      open_(tokenizer.require_special_id("<|open|>")),
      close_(tokenizer.require_special_id("<|close|>")),
      sep_(tokenizer.require_special_id("<|sep|>")),
      end_of_msg_(tokenizer.require_special_id("<|end_of_msg|>")),
      eos_(tokenizer.special_id("[EOS]")),
      phase_(thinking ? Phase::Reasoning : Phase::Answer),
      decoder_(tokenizer) {}

void ChatStreamParser::emit_text(std::string text, std::vector<ChatEvent>& events) {
  if (text.empty()) return;
  if (phase_ == Phase::Reasoning) events.push_back({ChatEvent::Kind::Reasoning, std::move(text)});
  else if (phase_ == Phase::Answer) events.push_back({ChatEvent::Kind::Answer, std::move(text)});
  // Text after the answer closed (before the end marker) belongs to no channel: dropped.
}

void ChatStreamParser::flush(std::vector<ChatEvent>& events) { emit_text(decoder_.finish(), events); }

void ChatStreamParser::on_tag(bool opening, const std::string& body, std::vector<ChatEvent>& events) {
  const std::string name = tag_name(body);
  if (name == "tools" || name == "call" || name == "argument" || name == "json") {
    flush(events);
    on_tool_tag(opening, name, body, events);
    return;
  }
  if (!opening && name == "think") {
    flush(events);
    phase_ = Phase::Answer;  // the response tag normally follows at once
  } else if (opening && name == "response") {
    flush(events);
    phase_ = Phase::Answer;
  } else if (opening && name == "think") {
    flush(events);
    phase_ = Phase::Reasoning;
  } else if (!opening && (name == "response" || name == "message")) {
    flush(events);
    phase_ = Phase::AfterAnswer;
  } else {
    events.push_back({ChatEvent::Kind::Tag, std::string(opening ? "open " : "close ") + utf8::sanitize(body)});
  }
}

void ChatStreamParser::on_tool_tag(bool opening, const std::string& name, const std::string& body,
                                   std::vector<ChatEvent>& events) {
  using ojson = nlohmann::ordered_json;
  if (opening && name == "call") {
    call_ = PendingCall{attribute(body, "tool"), {}, std::nullopt};
    capture_ = Capture::None;
  } else if (opening && (name == "argument" || name == "json") && call_) {
    capture_ = name == "argument" ? Capture::Argument : Capture::Json;
    capture_key_ = attribute(body, "key");
    capture_type_ = attribute(body, "type");
    capture_bytes_.clear();
  } else if (!opening && name == "argument" && call_ && capture_ == Capture::Argument) {
    const std::string value = utf8::sanitize(capture_bytes_);
    std::string json_text;
    if (capture_type_ == "string") {
      json_text = ojson(value).dump();
    } else {
      // Typed values are JSON; one that does not parse is kept as the text the model wrote.
      const ojson parsed = ojson::parse(value, nullptr, /*allow_exceptions=*/false);
      json_text = parsed.is_discarded() ? ojson(value).dump() : parsed.dump();
    }
    call_->arguments.emplace_back(capture_key_, std::move(json_text));
    capture_ = Capture::None;
  } else if (!opening && name == "json" && call_ && capture_ == Capture::Json) {
    call_->raw_json = utf8::sanitize(capture_bytes_);
    capture_ = Capture::None;
  } else if (!opening && name == "call" && call_) {
    std::string arguments;
    if (call_->raw_json) {
      arguments = *call_->raw_json;
    } else {
      ojson args = ojson::object();
      for (auto& [key, value] : call_->arguments) args[key] = ojson::parse(value);
      arguments = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
    }
    events.push_back({ChatEvent::Kind::ToolCall, utf8::sanitize(call_->name), std::move(arguments)});
    call_.reset();
    capture_ = Capture::None;
  }
  // <|open|>tools, <|close|>tools and stray pieces carry nothing to hand out.
}

std::vector<ChatEvent> ChatStreamParser::push(int32_t id) {
  std::vector<ChatEvent> events;
  if (phase_ == Phase::Done) return events;
  if (id == end_of_msg_ || (eos_ && id == *eos_)) {
    flush(events);
    tag_opening_.reset();
    phase_ = Phase::Done;
    events.push_back({ChatEvent::Kind::End, {}});
    return events;
  }
  if (id == open_ || id == close_) {
    flush(events);
    tag_opening_ = id == open_;
    tag_body_.clear();
    return events;
  }
  if (tag_opening_) {
    if (id == sep_) {
      const bool opening = *tag_opening_;
      tag_opening_.reset();
      on_tag(opening, tag_body_, events);
    } else if (!tokenizer_.is_special(id)) {
      tag_body_ += tokenizer_.token_bytes(id);
      if (tag_body_.size() > kMaxTagBytes) {
        tag_opening_.reset();
        emit_text(utf8::sanitize(tag_body_), events);
      }
    }
    return events;
  }
  if (tokenizer_.is_special(id)) return events;  // e.g. a stray <|sep|>: structure, not text
  if (capture_ != Capture::None) {
    capture_bytes_ += tokenizer_.token_bytes(id);
    return events;
  }
  emit_text(decoder_.push(id), events);
  return events;
}

std::vector<ChatEvent> ChatStreamParser::finish() {
  std::vector<ChatEvent> events;
  if (phase_ == Phase::Done) return events;
  if (tag_opening_) {
    tag_opening_.reset();
    emit_text(utf8::sanitize(tag_body_), events);
  }
  flush(events);
  return events;
}

}  // namespace deltafin
