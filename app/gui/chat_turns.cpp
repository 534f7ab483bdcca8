#include "chat_turns.h"

#include <QRandomGenerator>

namespace deltafin::gui {

std::vector<ChatMessage> engineMessages(const QList<ChatTurn>& turns) {
  std::vector<ChatMessage> out;
  out.reserve(static_cast<size_t>(turns.size()));
  for (const ChatTurn& t : turns) {
    ChatMessage m(t.role.toStdString(), t.content.toStdString(), std::string{}, t.reasoning.toStdString());
    for (const ToolCallInfo& c : t.toolCalls)
      m.tool_calls.push_back(ToolCall{c.id.toStdString(), c.name.toStdString(), c.arguments.toStdString()});
    if (t.role == QLatin1String("tool")) {
      m.tool_call_id = t.toolCallId.toStdString();
      m.name = t.toolName.toStdString();
    }
    out.push_back(std::move(m));
  }
  return out;
}

ToolCallInfo toolCallFromEvent(const ChatEvent& event) {
  ToolCallInfo c;
  QRandomGenerator* rng = QRandomGenerator::global();
  c.id = QStringLiteral("call_%1%2")
             .arg(rng->generate64(), 16, 16, QLatin1Char('0'))
             .arg(rng->generate(), 8, 16, QLatin1Char('0'));
  c.name = QString::fromStdString(event.text);
  c.arguments = QString::fromStdString(event.arguments);
  return c;
}

}  // namespace deltafin::gui
