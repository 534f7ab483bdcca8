#include "tokenizer/chat_stream_parser.h"

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
