#include "tokenizer/chat_template.h"

#include "base/error.h"

namespace deltafin {
namespace {

constexpr std::string_view kBos = "[BOS]", kOpen = "<|open|>", kClose = "<|close|>", kSep = "<|sep|>",
                           kEndOfMsg = "<|end_of_msg|>";

// One sink for both renderings, so the id form and the text form cannot drift apart.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void special(std::string_view name) = 0;
  virtual void text(std::string_view text) = 0;
};

class IdSink final : public Sink {
 public:
  explicit IdSink(const Tokenizer& tok) : tok_(tok) {}
  void special(std::string_view name) override { ids.push_back(tok_.require_special_id(name)); }
  void text(std::string_view text) override {
    const std::vector<int32_t> piece = tok_.encode(text, /*allow_special=*/false);
    ids.insert(ids.end(), piece.begin(), piece.end());
  }
  std::vector<int32_t> ids;

 private:
  const Tokenizer& tok_;
};

class TextSink final : public Sink {
 public:
  void special(std::string_view name) override { out += name; }
  void text(std::string_view text) override { out += text; }
  std::string out;
};

void open_tag(Sink& sink, std::string_view name, const std::string& attributes = {}) {
  sink.special(kOpen);
  sink.text(std::string(name) + attributes);
  sink.special(kSep);
}

void close_tag(Sink& sink, std::string_view name) {
  sink.special(kClose);
  sink.text(name);
  sink.special(kSep);
}

std::string attribute(std::string_view key, std::string_view value) {
  return " " + std::string(key) + "=\"" + escape_xtml_attribute(value) + "\"";
}

void message(Sink& sink, const ChatMessage& m) {
  if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
    throw Error("unknown chat role '" + m.role + "'", "use system, user, assistant or tool");
  std::string attributes = attribute("role", m.role);
  if (!m.name.empty()) attributes += attribute("name", m.name);
  open_tag(sink, "message", attributes);
  if (m.role == "assistant") {
    if (!m.reasoning.empty()) {
      open_tag(sink, "think");
      sink.text(m.reasoning);
      close_tag(sink, "think");
    }
    open_tag(sink, "response");
    sink.text(m.content);
    close_tag(sink, "response");
  } else {
    sink.text(m.content);
  }
  close_tag(sink, "message");
  sink.special(kEndOfMsg);
}

void render(Sink& sink, std::span<const ChatMessage> messages, const ChatOptions& options) {
  if (options.add_bos) sink.special(kBos);
  // K3 takes the effort as an internal system message; it goes first, like any system prompt.
  // Its exact wording is Deltafin's (the spec fixes only that it is an internal system message).
  if (options.effort != ReasoningEffort::Unset) {
    open_tag(sink, "message", attribute("role", "system") + attribute("internal", "true"));
    sink.text("Reasoning effort: " + std::string(reasoning_effort_name(options.effort)));
    close_tag(sink, "message");
    sink.special(kEndOfMsg);
  }
  for (const ChatMessage& m : messages) message(sink, m);
  if (options.add_generation_prompt) {
    open_tag(sink, "message", attribute("role", "assistant"));
    open_tag(sink, options.thinking ? "think" : "response");
  }
}

}  // namespace

std::string escape_xtml_attribute(std::string_view value) {
  std::string amp;
  for (char c : value) {
    if (c == '&') amp += "&amp;";
    else amp.push_back(c);
  }
  std::string out;
  for (char c : amp) {
    if (c == '"') out += "&quot;";
    else out.push_back(c);
  }
  return out;
}

std::optional<ReasoningEffort> parse_reasoning_effort(std::string_view text) {
  if (text == "low") return ReasoningEffort::Low;
  if (text == "high") return ReasoningEffort::High;
  if (text == "max") return ReasoningEffort::Max;
  return std::nullopt;
}

std::string_view reasoning_effort_name(ReasoningEffort effort) {
  switch (effort) {
    case ReasoningEffort::Low: return "low";
    case ReasoningEffort::High: return "high";
    case ReasoningEffort::Max: return "max";
    case ReasoningEffort::Unset: break;
  }
  return "";
}

std::vector<int32_t> render_chat(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                 const ChatOptions& options) {
  IdSink sink(tokenizer);
  render(sink, messages, options);
  return std::move(sink.ids);
}

std::string render_chat_text(std::span<const ChatMessage> messages, const ChatOptions& options) {
  TextSink sink;
  render(sink, messages, options);
  return std::move(sink.out);
}

}  // namespace deltafin
