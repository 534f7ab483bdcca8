#include "tokenizer/chat_template.h"

#include <algorithm>
#include <map>

#include "base/error.h"

namespace deltafin {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kBos = "[BOS]", kOpen = "<|open|>", kClose = "<|close|>", kSep = "<|sep|>",
                           kEndOfMsg = "<|end_of_msg|>";

// The fixed texts of K3's internal system messages (Moonshot's encoding_k3; K3-SPEC section 4).
constexpr std::string_view kToolsHeader =
    "# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n";
constexpr std::string_view kNewToolsHeader =
    "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\nYou have access to all "
    "existing and extended tools.\nHere are the specs for the extended tools.\n\n```json\n";
constexpr std::string_view kJsonFence = "\n```";
constexpr std::string_view kRawJson =
    "Your response must be raw JSON data without markdown code blocks (```json) or any additional formatting.";

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

using Attributes = std::vector<std::pair<std::string_view, std::string>>;

void open_tag(Sink& sink, std::string_view name, const Attributes& attributes = {}) {
  sink.special(kOpen);
  sink.text(name);
  for (const auto& [key, value] : attributes) {
    sink.text(" " + std::string(key));
    sink.text("=\"");
    sink.text(escape_xtml_attribute(value));
    sink.text("\"");
  }
  sink.special(kSep);
}

void close_tag(Sink& sink, std::string_view name) {
  sink.special(kClose);
  sink.text(name);
  sink.special(kSep);
}

void whole_message(Sink& sink, const Attributes& attributes, std::string_view body) {
  open_tag(sink, "message", attributes);
  sink.text(body);
  close_tag(sink, "message");
  sink.special(kEndOfMsg);
}

void internal_message(Sink& sink, std::string_view type, std::string_view body) {
  whole_message(sink, {{"role", "system"}, {"type", std::string(type)}}, body);
}

// Python's str.strip() on the whitespace a reasoning text can plausibly hold.
bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t\n\r\f\v\x1c\x1d\x1e\x1f") == std::string_view::npos;
}

std::string compact_sorted(const nlohmann::json& value) {
  return python_json_dumps(ojson::parse(value.dump()), /*compact=*/true, /*sort_keys=*/true);
}

void tool_declaration(Sink& sink, const nlohmann::json& tools, bool added_later) {
  std::string body(added_later ? kNewToolsHeader : kToolsHeader);
  body += compact_sorted(tools);
  body += kJsonFence;
  internal_message(sink, "tool-declare", body);
}

std::string_view value_type(const ojson& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_object()) return "object";
  return "array";
}

void tool_calls(Sink& sink, const std::vector<ToolCall>& calls) {
  open_tag(sink, "tools");
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCall& call = calls[i];
    open_tag(sink, "call", {{"tool", call.name}, {"index", std::to_string(i + 1)}});
    if (!is_blank(call.arguments)) {
      const ojson args = ojson::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
      if (args.is_discarded()) {
        // Stored arguments that are not JSON go back to the model as it wrote them.
        open_tag(sink, "json", {{"type", "object"}});
        sink.text(call.arguments);
        close_tag(sink, "json");
      } else if (!args.is_object()) {
        throw Error(
            "the arguments of tool call " + std::to_string(i + 1) + " ('" + call.name + "') are JSON but not an object",
            "send the arguments as a JSON object, e.g. {\"city\": \"Paris\"}");
      } else {
        for (auto it = args.begin(); it != args.end(); ++it) {
          open_tag(sink, "argument", {{"key", it.key()}, {"type", std::string(value_type(it.value()))}});
          sink.text(it.value().is_string() ? it.value().get<std::string>()
                                           : python_json_dumps(it.value(), /*compact=*/false, /*sort_keys=*/false));
          close_tag(sink, "argument");
        }
      }
    }
    close_tag(sink, "call");
  }
  close_tag(sink, "tools");
}

// Tool results answer the last assistant message's calls in any order; a run of them whose
// every tool_call_id names one of those calls is put in call order and named after its call
// (the reference does the same). A run that cannot be matched whole stays as sent.
std::vector<ChatMessage> order_tool_results(std::span<const ChatMessage> messages) {
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  std::map<std::string, std::pair<size_t, std::string>> calls;  // id -> (position, name)
  for (size_t i = 0; i < messages.size();) {
    const ChatMessage& m = messages[i];
    if (m.role == "assistant") {
      calls.clear();
      for (size_t k = 0; k < m.tool_calls.size(); ++k)
        if (!m.tool_calls[k].id.empty()) calls.emplace(m.tool_calls[k].id, std::make_pair(k, m.tool_calls[k].name));
    }
    if (m.role != "tool") {
      out.push_back(m);
      ++i;
      continue;
    }
    size_t end = i;
    bool all_known = true;
    while (end < messages.size() && messages[end].role == "tool") {
      all_known &= calls.count(messages[end].tool_call_id) > 0;
      ++end;
    }
    std::vector<ChatMessage> run(messages.begin() + i, messages.begin() + end);
    if (all_known) {
      std::stable_sort(run.begin(), run.end(), [&](const ChatMessage& a, const ChatMessage& b) {
        return calls.at(a.tool_call_id).first < calls.at(b.tool_call_id).first;
      });
      for (ChatMessage& r : run) r.name = calls.at(r.tool_call_id).second;
    }
    out.insert(out.end(), run.begin(), run.end());
    i = end;
  }
  return out;
}

void render(Sink& sink, std::span<const ChatMessage> input, const ChatOptions& options) {
  for (const ChatMessage& m : input)
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      throw Error("unknown chat role '" + m.role + "'", "use system, user, assistant or tool");
  const std::vector<ChatMessage> messages = order_tool_results(input);

  if (options.add_bos) sink.special(kBos);
  if (options.tools.is_array() && !options.tools.empty()) tool_declaration(sink, options.tools, false);
  if (options.thinking && options.effort != ReasoningEffort::Unset)
    internal_message(
        sink, "thinking-effort",
        "`thinking_effort` guides on how much to think in your thinking channel (not including the response "
        "channel), supported values include `low`, `medium`, `high`, and `max`.\nNow the system is invoked "
        "with `thinking_effort=" +
            std::string(reasoning_effort_name(options.effort)) + "`.");

  const std::vector<ToolCall>* last_calls = nullptr;
  size_t tool_index = 0;  // counts tool results from 1 after each assistant message
  for (const ChatMessage& m : messages) {
    if (m.role == "system" && m.tools.is_array() && !m.tools.empty()) {
      tool_declaration(sink, m.tools, true);
      continue;
    }
    if (m.role == "tool") {
      ++tool_index;
      std::string tool = m.name;
      if (tool.empty() && last_calls && tool_index <= last_calls->size()) tool = (*last_calls)[tool_index - 1].name;
      if (tool.empty())
        throw Error(
            "tool result " + std::to_string(tool_index) + " names no tool and answers no call of the message before it",
            "send it after the assistant message with its tool_calls, with the matching tool_call_id");
      whole_message(sink, {{"role", "tool"}, {"tool", tool}, {"index", std::to_string(tool_index)}}, m.content);
      continue;
    }
    Attributes attributes = {{"role", m.role}};
    if (!m.name.empty()) attributes.emplace_back("name", m.name);
    if (m.role != "assistant") {
      whole_message(sink, attributes, m.content);
      continue;
    }
    last_calls = &m.tool_calls;
    tool_index = 0;
    open_tag(sink, "message", attributes);
    if (options.thinking) {
      // With thinking on every earlier turn keeps its think block, empty when it had no reasoning.
      open_tag(sink, "think");
      if (!is_blank(m.reasoning)) sink.text(m.reasoning);
      close_tag(sink, "think");
    }
    open_tag(sink, "response");
    sink.text(m.content);
    close_tag(sink, "response");
    if (!m.tool_calls.empty()) tool_calls(sink, m.tool_calls);
    close_tag(sink, "message");
    sink.special(kEndOfMsg);
  }

  if (options.tool_choice == ToolChoice::Required)
    internal_message(sink, "tool-choice",
                     "The system is invoked with `tool_choice=required`.\nYou MUST call tools in the next message.");
  else if (options.tool_choice == ToolChoice::None)
    internal_message(
        sink, "tool-choice",
        "The system is invoked with `tool_choice=none`.\nYou MUST NOT call any tools in the next message.");
  const ResponseFormat& rf = options.response_format;
  if (rf.kind == ResponseFormat::Kind::JsonObject) {
    internal_message(sink, "response-format",
                     "The system is invoked with `response_format=json_object`.\n" + std::string(kRawJson));
  } else if (rf.kind == ResponseFormat::Kind::JsonSchema) {
    internal_message(sink, "response-format",
                     "The system is invoked with `response_format=json_schema`.\n" + std::string(kRawJson) +
                         "\nThe JSON data must match the following schema:\n```json\n" + compact_sorted(rf.schema) +
                         std::string(kJsonFence));
  }

  if (options.add_generation_prompt) {
    open_tag(sink, "message", {{"role", "assistant"}});
    open_tag(sink, options.thinking ? "think" : "response");
  }
}

void dump_value(const ojson& v, bool compact, bool sort_keys, std::string& out) {
  if (v.is_object()) {
    if (v.empty()) {
      out += "{}";
      return;
    }
    std::vector<ojson::const_iterator> items;
    for (auto it = v.begin(); it != v.end(); ++it) items.push_back(it);
    // UTF-8 byte order is code point order, which is how Python sorts str keys.
    if (sort_keys) std::stable_sort(items.begin(), items.end(), [](auto a, auto b) { return a.key() < b.key(); });
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += compact ? "," : ", ";
      out += ojson(items[i].key()).dump(-1, ' ', false, ojson::error_handler_t::replace);
      out += compact ? ":" : ": ";
      dump_value(items[i].value(), compact, sort_keys, out);
    }
    out += '}';
  } else if (v.is_array()) {
    if (v.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += compact ? "," : ", ";
      dump_value(v[i], compact, sort_keys, out);
    }
    out += ']';
  } else {
    out += v.dump(-1, ' ', false, ojson::error_handler_t::replace);
  }
}

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& value, bool compact, bool sort_keys) {
  std::string out;
  dump_value(value, compact, sort_keys, out);
  return out;
}

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

std::string unescape_xtml_attribute(std::string_view value) {
  std::string quot;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value.compare(i, 6, "&quot;") == 0) {
      quot += '"';
      i += 5;
    } else {
      quot += value[i];
    }
  }
  std::string out;
  for (size_t i = 0; i < quot.size(); ++i) {
    if (quot.compare(i, 5, "&amp;") == 0) {
      out += '&';
      i += 4;
    } else {
      out += quot[i];
    }
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
    case ReasoningEffort::Low:
      return "low";
    case ReasoningEffort::High:
      return "high";
    case ReasoningEffort::Max:
      return "max";
    case ReasoningEffort::Unset:
      break;
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
