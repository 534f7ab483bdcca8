#pragma once
// Conversations shown in the chat sidebar, kept as one JSON file so they survive restarts.
#include <QDateTime>
#include <QList>
#include <QObject>
#include <QJsonObject>
#include <QString>

#include "chat_types.h"

namespace deltafin::gui {

struct StoredMessage {
  QString role;  // "user", "assistant", "system" or "tool" (a tool's result, from an agent's history)
  QString content;
  QString reasoning;
  QList<ToolCallInfo> toolCalls;  // assistant: the tools it called
  QString toolCallId, toolName;   // tool: the call answered and the tool that answered
  bool hasStats = false;
  GenerationStats stats;
  QString error;                   // why the reply failed, when it did
  bool reasoningExpanded = false;  // the reasoning section was left open
};

// Per-chat generation settings, from the chat's side panel.
struct ChatSettings {
  QString systemPrompt;
  double temperature = 0.0;  // 0: greedy
  double topP = 1.0;
  quint64 seed = 0;
  QString effort;  // "", "low", "high", "max"

  bool operator==(const ChatSettings&) const = default;
};

struct Conversation {
  QString id;
  QString title;
  QDateTime updated;
  QList<StoredMessage> messages;
  ChatSettings settings;
};

// A conversation as one JSON object (the store's own format) and back.
QJsonObject conversationToJson(const Conversation& c);
Conversation conversationFromJson(const QJsonObject& o);
// The conversation as Markdown for people to read; markers in HTML comments (invisible when
// rendered) let importConversations() read it back.
QString conversationToMarkdown(const Conversation& c);

class ConversationStore : public QObject {
  Q_OBJECT
 public:
  // `path`: the JSON file; it is created on first save.
  explicit ConversationStore(QString path, QObject* parent = nullptr);

  const QList<Conversation>& conversations() const { return conversations_; }
  Conversation* find(const QString& id);
  QString create();
  void remove(const QString& id);
  void update(const Conversation& c);  // replaces the conversation with the same id and saves
  // Changes that do not make a chat more recent (its place in the list stays).
  void rename(const QString& id, const QString& title);
  void setSettings(const QString& id, const ChatSettings& settings);
  void setReasoningExpanded(const QString& id, int message, bool expanded);
  // Ids of the conversations whose title or messages contain `text` (case-insensitive), newest
  // first; every id for an empty text.
  QStringList search(const QString& text) const;

  // Writes one conversation as "markdown" or "json"; false with `error` set when it cannot.
  bool exportConversation(const QString& id, const QString& file, const QString& format, QString* error) const;
  // Reads a file written by exportConversation (either format), a whole conversations.json, or an
  // OpenAI-style chat request or transcript ({"messages": [...]}, tool calls and results kept:
  // what an agent sent), and adds its conversations under new ids. Returns their ids; empty with `error` set when the
  // file is not one of those (nothing is added then).
  QStringList importConversations(const QString& file, QString* error);

  QString path() const { return path_; }
  QString loadError() const { return loadError_; }

 signals:
  void changed();

 private:
  void load();
  void save();

  QString path_;
  QString loadError_;
  QList<Conversation> conversations_;
};

}  // namespace deltafin::gui
