#pragma once
// Kimi K3's XTML chat format (K3-SPEC.md section 4), rendered straight to ids.
//
//   std::vector<deltafin::ChatMessage> chat = {{"system", "Be brief."}, {"user", "Hi!"}};
//   deltafin::ChatOptions opt;              // thinking on, no effort message, [BOS] first
//   opt.effort = deltafin::ReasoningEffort::High;
//   std::vector<int32_t> prompt = deltafin::render_chat(*tokenizer, chat, opt);
//
// Structural pieces (<|open|>, <|sep|>, <|close|>, <|end_of_msg|>) are emitted as special ids;
// every text (content, role, names) is encoded as plain text, so nothing a user types can
// become a special id.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace deltafin {

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string role_, std::string content_, std::string name_ = {}, std::string reasoning_ = {})
      : role(std::move(role_)), content(std::move(content_)), name(std::move(name_)), reasoning(std::move(reasoning_)) {}

  std::string role;       // "system", "user", "assistant" or "tool"
  std::string content;
  std::string name;       // optional attribute name="..." (e.g. the tool that produced a tool message)
  std::string reasoning;  // assistant only: earlier reasoning to replay inside a think block
};

enum class ReasoningEffort { Unset, Low, High, Max };

struct ChatOptions {
  bool thinking = true;                               // prompt opens a think block (else response)
  ReasoningEffort effort = ReasoningEffort::Unset;    // Unset: no effort message at all
  bool add_bos = true;                                // start with [BOS], as raw prompts do
  bool add_generation_prompt = true;                  // end with the assistant's opening
};

// Throws deltafin::Error for an unknown role or a tokenizer without the XTML specials.
std::vector<int32_t> render_chat(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                 const ChatOptions& options = {});

// The same conversation as text with special-token spelling, for logs and for comparing with
// `encode(text, allow_special=true)`; never feed user-controlled output of this to encode with
// specials allowed.
std::string render_chat_text(std::span<const ChatMessage> messages, const ChatOptions& options = {});

// Attribute values: '&' becomes "&amp;" first, then '"' becomes "&quot;".
std::string escape_xtml_attribute(std::string_view value);

// "low", "high", "max" (case-sensitive); nullopt otherwise.
std::optional<ReasoningEffort> parse_reasoning_effort(std::string_view text);
std::string_view reasoning_effort_name(ReasoningEffort effort);

}  // namespace deltafin
