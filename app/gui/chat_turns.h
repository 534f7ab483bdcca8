#pragma once
// The chat's turns as the engine's chat template takes them, and the engine's tool-call events as
// the chat shows them: the local engine's side of tool calls and tool results.
#include <vector>

#include "chat_types.h"
#include "tokenizer/chat_stream_parser.h"
#include "tokenizer/chat_template.h"

namespace deltafin::gui {

// Every turn, tool calls (assistant) and tool results (their call id and tool) included.
std::vector<ChatMessage> engineMessages(const QList<ChatTurn>& turns);

// A complete call the model made (ChatEvent::Kind::ToolCall), named with a fresh id ("call_" and
// 24 hex digits, as the server names them: K3's format has no ids).
ToolCallInfo toolCallFromEvent(const ChatEvent& event);

}  // namespace deltafin::gui
