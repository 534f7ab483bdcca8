#pragma once
// Kimi K3's XTML chat format (K3-SPEC.md section 4, Moonshot's encoding_k3), rendered straight to ids.
//
//   std::vector<deltafin::ChatMessage> chat = {{"system", "Be brief."}, {"user", "Hi!"}};
//   deltafin::ChatOptions opt;              // thinking on, no effort message, [BOS] first
//   opt.effort = deltafin::ReasoningEffort::High;
//   opt.tools = nlohmann::json::parse(R"([{"type":"function","function":{"name":"f"}}])");
//   std::vector<int32_t> prompt = deltafin::render_chat(*tokenizer, chat, opt);
//
// Prompt order: tool declaration, thinking effort, the conversation, tool choice, response
// format, the generation prompt. Structural pieces (<|open|>, <|sep|>, <|close|>,
// <|end_of_msg|>) are emitted as special ids; every text (content, names, attribute values) is
// encoded as plain text, so nothing a client sends can become a special id. A tag's name and each
// attribute's four pieces (` key`, `="`, the escaped value, `"`) are encoded separately, as the
// reference encoder does (it matters where a value starts with punctuation).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace deltafin {

// One call an assistant made. There are no call ids in K3's format: `id` only pairs tool
// results with their call (and orders them); it is never rendered.
struct ToolCall {
  std::string id;
  std::string name;
  // The arguments as the client stored them: JSON text of an object. Each key becomes an
  // <|open|>argument; text that is not JSON renders raw inside <|open|>json type="object".
  std::string arguments;
};

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string role_, std::string content_, std::string name_ = {}, std::string reasoning_ = {})
      : role(std::move(role_)),
        content(std::move(content_)),
        name(std::move(name_)),
        reasoning(std::move(reasoning_)) {}

  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  // system/user/assistant: the optional name="..." attribute. tool: the tool that answered
  // (else the name of the call at the same position in the last assistant message).
  std::string name;
  std::string reasoning;             // assistant only: earlier reasoning, replayed in the think block
  std::vector<ToolCall> tool_calls;  // assistant only
  std::string tool_call_id;          // tool only: the call this answers
  // system only: tools declared mid-conversation (an array); the message then becomes a
  // "## New Tools Available" declaration and its content is not rendered.
  nlohmann::json tools;
};

enum class ReasoningEffort { Unset, Low, High, Max };
enum class ToolChoice { Auto, Required, None };

struct ResponseFormat {
  enum class Kind { Text, JsonObject, JsonSchema };
  Kind kind = Kind::Text;
  nlohmann::json schema;  // JsonSchema only; null renders as `null`, as the reference does
};

struct ChatOptions {
  bool thinking = true;                             // prompt opens a think block (else response)
  ReasoningEffort effort = ReasoningEffort::Unset;  // Unset: no effort message (thinking only)
  bool add_bos = true;                              // start with [BOS], as raw prompts do
  bool add_generation_prompt = true;                // end with the assistant's opening
  nlohmann::json tools;                             // the request's tools (an array; null/empty: none)
  ToolChoice tool_choice = ToolChoice::Auto;
  ResponseFormat response_format;
};

// Throws deltafin::Error for an unknown role, a tool result whose tool cannot be named, tool-call
// arguments that are JSON but not an object, or a tokenizer without the XTML specials.
std::vector<int32_t> render_chat(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                 const ChatOptions& options = {});

// The same conversation as text with special-token spelling, for logs and for comparing with
// `encode(text, allow_special=true)`; never feed user-controlled output of this to encode with
// specials allowed.
std::string render_chat_text(std::span<const ChatMessage> messages, const ChatOptions& options = {});

// Attribute values: '&' becomes "&amp;" first, then '"' becomes "&quot;".
std::string escape_xtml_attribute(std::string_view value);
// The inverse, for attribute values the model generates.
std::string unescape_xtml_attribute(std::string_view value);

// JSON text as Python's json.dumps(value, ensure_ascii=False) writes it: compact uses ","/":"
// separators, otherwise ", "/": "; `sort_keys` orders every object's keys (else insertion order).
std::string python_json_dumps(const nlohmann::ordered_json& value, bool compact, bool sort_keys);

// "low", "high", "max" (case-sensitive); nullopt otherwise.
std::optional<ReasoningEffort> parse_reasoning_effort(std::string_view text);
std::string_view reasoning_effort_name(ReasoningEffort effort);

}  // namespace deltafin
