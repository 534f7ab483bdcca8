#include "conversation_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSaveFile>
#include <QUuid>

#include <algorithm>

#include "formatting.h"

namespace deltafin::gui {
namespace {

// What an exported single conversation says it is, so an import can tell it from other JSON.
const QLatin1String kExportFormat("deltafin-chat");
// Markdown markers: HTML comments are invisible in rendered Markdown.
const QLatin1String kMarkdownHeader("<!-- deltafin-chat ");
const QRegularExpression kMessageMarker(QStringLiteral("^<!-- message role=\"(user|assistant|system|tool)\" -->$"));
// A message's tool calls (JSON, after its text) and a tool result's call (JSON, before its text).
const QLatin1String kToolCallsMarker("<!-- tool-calls ");
const QLatin1String kToolResultMarker("<!-- tool-result ");
const QLatin1String kReasoningOpen("<details><summary>Reasoning</summary>");
const QLatin1String kReasoningClose("</details>");

QJsonObject statsToJson(const GenerationStats& s) {
  return QJsonObject{{"prompt_tokens", s.promptTokens},
                     {"new_tokens", s.newTokens},
                     {"first_token_seconds", s.firstTokenSeconds},
                     {"decode_tokens_per_second", s.decodeTokensPerSecond},
                     {"prefill_tokens_per_second", s.prefillTokensPerSecond},
                     {"total_seconds", s.totalSeconds},
                     {"stopped_by_user", s.stoppedByUser},
                     {"drafter", s.drafter},
                     {"draft_proposed", s.proposed},
                     {"draft_accepted", s.accepted}};
}

GenerationStats statsFromJson(const QJsonObject& o) {
  GenerationStats s;
  s.promptTokens = o.value("prompt_tokens").toInt();
  s.newTokens = o.value("new_tokens").toInt();
  s.firstTokenSeconds = o.value("first_token_seconds").toDouble();
  s.decodeTokensPerSecond = o.value("decode_tokens_per_second").toDouble();
  s.prefillTokensPerSecond = o.value("prefill_tokens_per_second").toDouble();
  s.totalSeconds = o.value("total_seconds").toDouble();
  s.stoppedByUser = o.value("stopped_by_user").toBool();
  s.drafter = o.value("drafter").toString();
  s.proposed = o.value("draft_proposed").toInt();
  s.accepted = o.value("draft_accepted").toInt();
  return s;
}

QJsonObject settingsToJson(const ChatSettings& s) {
  QJsonObject o{{"temperature", s.temperature}, {"top_p", s.topP}, {"seed", QString::number(s.seed)}};
  if (!s.systemPrompt.isEmpty()) o.insert("system_prompt", s.systemPrompt);
  if (!s.effort.isEmpty()) o.insert("effort", s.effort);
  return o;
}

ChatSettings settingsFromJson(const QJsonObject& o) {
  ChatSettings s;
  s.systemPrompt = o.value("system_prompt").toString();
  s.temperature = std::clamp(o.value("temperature").toDouble(0.0), 0.0, 2.0);
  s.topP = std::clamp(o.value("top_p").toDouble(1.0), 0.0, 1.0);
  s.seed = o.value("seed").toString().toULongLong();  // a string: JSON numbers lose 64-bit seeds
  const QString effort = o.value("effort").toString();
  if (effort == QLatin1String("low") || effort == QLatin1String("high") || effort == QLatin1String("max"))
    s.effort = effort;
  return s;
}

QString roleHeading(const StoredMessage& m) {
  if (m.role == QLatin1String("user")) return ConversationStore::tr("You");
  if (m.role == QLatin1String("system")) return ConversationStore::tr("System");
  if (m.role == QLatin1String("tool")) return ConversationStore::tr("Tool result: %1").arg(m.toolName);
  return ConversationStore::tr("K3");
}

// OpenAI's form: {"id", "type": "function", "function": {"name", "arguments"}}.
QJsonArray toolCallsToJson(const QList<ToolCallInfo>& calls) {
  QJsonArray out;
  for (const ToolCallInfo& c : calls)
    out.push_back(QJsonObject{
        {"id", c.id}, {"type", "function"}, {"function", QJsonObject{{"name", c.name}, {"arguments", c.arguments}}}});
  return out;
}

QList<ToolCallInfo> toolCallsFromJson(const QJsonArray& a) {
  QList<ToolCallInfo> out;
  for (const QJsonValue& v : a) {
    const QJsonObject o = v.toObject();
    const QJsonObject f = o.value("function").toObject();
    ToolCallInfo c;
    c.id = o.value("id").toString();
    c.name = f.value("name").toString();
    // Arguments are JSON text; a client that stored them as an object gets the same text back.
    const QJsonValue args = f.value("arguments");
    c.arguments = args.isString()   ? args.toString()
                  : args.isObject() ? QString::fromUtf8(QJsonDocument(args.toObject()).toJson(QJsonDocument::Compact))
                                    : QString();
    if (!c.name.isEmpty()) out.push_back(c);
  }
  return out;
}

// A message's text: a string, null (a message of tool calls only) or OpenAI's array of text parts.
QString contentText(const QJsonValue& v) {
  if (!v.isArray()) return v.toString();
  QString text;
  for (const QJsonValue& part : v.toArray())
    if (part.toObject().value("type").toString() == QLatin1String("text"))
      text += part.toObject().value("text").toString();
  return text;
}

// Lines of [from, to) joined, without the blank lines at either end.
QString joinTrimmed(const QStringList& lines, qsizetype from, qsizetype to) {
  while (from < to && lines[from].trimmed().isEmpty()) ++from;
  while (to > from && lines[to - 1].trimmed().isEmpty()) --to;
  return lines.mid(from, to - from).join('\n');
}

// Reads the Markdown written by conversationToMarkdown; false when the markers are missing.
bool conversationFromMarkdown(const QString& text, Conversation* out) {
  const QStringList lines = text.split('\n');
  qsizetype i = 0;
  while (i < lines.size() && lines[i].trimmed().isEmpty()) ++i;
  if (i >= lines.size() || !lines[i].startsWith(QLatin1String("# "))) return false;
  Conversation c;
  c.title = lines[i].mid(2).trimmed();
  ++i;
  while (i < lines.size() && lines[i].trimmed().isEmpty()) ++i;
  if (i >= lines.size() || !lines[i].startsWith(kMarkdownHeader) || !lines[i].endsWith(QLatin1String(" -->")))
    return false;
  const QString header = lines[i].mid(kMarkdownHeader.size(), lines[i].size() - kMarkdownHeader.size() - 4);
  const QJsonObject meta = QJsonDocument::fromJson(header.toUtf8()).object();
  c.settings = settingsFromJson(meta.value("settings").toObject());
  ++i;
  QList<qsizetype> starts;
  for (qsizetype j = i; j < lines.size(); ++j)
    if (kMessageMarker.match(lines[j]).hasMatch()) starts << j;
  for (int k = 0; k < starts.size(); ++k) {
    const qsizetype begin = starts[k], end = k + 1 < starts.size() ? starts[k + 1] : lines.size();
    StoredMessage m;
    m.role = kMessageMarker.match(lines[begin]).captured(1);
    qsizetype j = begin + 1;
    if (j < end && lines[j].startsWith(QLatin1String("## "))) ++j;  // the heading for readers
    while (j < end && lines[j].trimmed().isEmpty()) ++j;
    if (j < end && lines[j].startsWith(kToolResultMarker) && lines[j].endsWith(QLatin1String(" -->"))) {
      const QJsonObject call =
          QJsonDocument::fromJson(
              lines[j].mid(kToolResultMarker.size(), lines[j].size() - kToolResultMarker.size() - 4).toUtf8())
              .object();
      m.toolCallId = call.value("tool_call_id").toString();
      m.toolName = call.value("name").toString();
      ++j;
      while (j < end && lines[j].trimmed().isEmpty()) ++j;
    }
    if (j < end && lines[j] == kReasoningOpen) {
      qsizetype close = j + 1;
      while (close < end && lines[close] != kReasoningClose) ++close;
      m.reasoning = joinTrimmed(lines, j + 1, close);
      j = std::min(end, close + 1);
    }
    // The figures line under an answer is for readers; the numbers travel in the JSON export.
    qsizetype contentEnd = end;
    while (contentEnd > j && lines[contentEnd - 1].trimmed().isEmpty()) --contentEnd;
    if (contentEnd > j && lines[contentEnd - 1].startsWith(QLatin1String("<!-- stats -->"))) --contentEnd;
    // The calls' list under the text is for readers; the marker before it holds them.
    for (qsizetype k = j; k < contentEnd; ++k) {
      if (!lines[k].startsWith(kToolCallsMarker) || !lines[k].endsWith(QLatin1String(" -->"))) continue;
      m.toolCalls = toolCallsFromJson(
          QJsonDocument::fromJson(
              lines[k].mid(kToolCallsMarker.size(), lines[k].size() - kToolCallsMarker.size() - 4).toUtf8())
              .array());
      contentEnd = k;
      break;
    }
    m.content = joinTrimmed(lines, j, contentEnd);
    c.messages.push_back(m);
  }
  *out = c;
  return true;
}

}  // namespace

QJsonObject conversationToJson(const Conversation& c) {
  QJsonArray msgs;
  for (const StoredMessage& m : c.messages) {
    QJsonObject o{{"role", m.role}, {"content", m.content}};
    if (!m.reasoning.isEmpty()) o.insert("reasoning", m.reasoning);
    if (!m.toolCalls.isEmpty()) o.insert("tool_calls", toolCallsToJson(m.toolCalls));
    if (m.role == QLatin1String("tool")) {
      o.insert("tool_call_id", m.toolCallId);
      o.insert("name", m.toolName);
    }
    if (m.reasoningExpanded) o.insert("reasoning_expanded", true);
    if (!m.error.isEmpty()) o.insert("error", m.error);
    if (m.hasStats) o.insert("stats", statsToJson(m.stats));
    msgs.push_back(o);
  }
  return QJsonObject{{"id", c.id},
                     {"title", c.title},
                     {"updated", c.updated.toString(Qt::ISODate)},
                     {"settings", settingsToJson(c.settings)},
                     {"messages", msgs}};
}

Conversation conversationFromJson(const QJsonObject& o) {
  Conversation c;
  c.id = o.value("id").toString();
  c.title = o.value("title").toString();
  c.updated = QDateTime::fromString(o.value("updated").toString(), Qt::ISODate);
  c.settings = settingsFromJson(o.value("settings").toObject());
  for (const QJsonValue& mv : o.value("messages").toArray()) {
    const QJsonObject m = mv.toObject();
    StoredMessage sm;
    sm.role = m.value("role").toString();
    if (sm.role == QLatin1String("developer")) sm.role = QStringLiteral("system");  // OpenAI's newer name
    sm.content = contentText(m.value("content"));
    sm.reasoning = m.contains("reasoning") ? m.value("reasoning").toString() : m.value("reasoning_content").toString();
    sm.toolCalls = toolCallsFromJson(m.value("tool_calls").toArray());
    if (sm.role == QLatin1String("tool")) {
      sm.toolCallId = m.value("tool_call_id").toString();
      sm.toolName = m.value("name").toString();
    }
    sm.reasoningExpanded = m.value("reasoning_expanded").toBool();
    sm.error = m.value("error").toString();
    if (m.contains("stats")) {
      sm.hasStats = true;
      sm.stats = statsFromJson(m.value("stats").toObject());
    }
    c.messages.push_back(sm);
  }
  return c;
}

QString conversationToMarkdown(const Conversation& c) {
  QString md;
  md += QStringLiteral("# %1\n\n").arg(c.title.simplified());
  const QJsonObject meta{{"version", 1}, {"settings", settingsToJson(c.settings)}};
  md += kMarkdownHeader + QString::fromUtf8(QJsonDocument(meta).toJson(QJsonDocument::Compact)) +
        QStringLiteral(" -->\n");
  if (!c.settings.systemPrompt.isEmpty())
    md += QStringLiteral("\n> %1\n")
              .arg(ConversationStore::tr("System prompt: %1").arg(c.settings.systemPrompt.simplified()));
  for (const StoredMessage& m : c.messages) {
    md += QStringLiteral("\n<!-- message role=\"%1\" -->\n## %2\n\n").arg(m.role, roleHeading(m));
    if (m.role == QLatin1String("tool"))
      md += kToolResultMarker +
            QString::fromUtf8(QJsonDocument(QJsonObject{{"tool_call_id", m.toolCallId}, {"name", m.toolName}})
                                  .toJson(QJsonDocument::Compact)) +
            QStringLiteral(" -->\n\n");
    if (!m.reasoning.isEmpty())
      md += kReasoningOpen + QStringLiteral("\n\n%1\n\n").arg(m.reasoning) + kReasoningClose + '\n' + '\n';
    md += m.content + '\n';
    if (!m.toolCalls.isEmpty()) {
      md += '\n' + kToolCallsMarker +
            QString::fromUtf8(QJsonDocument(toolCallsToJson(m.toolCalls)).toJson(QJsonDocument::Compact)) +
            QStringLiteral(" -->\n");
      for (const ToolCallInfo& call : m.toolCalls)
        md += QStringLiteral("- %1 `%2` `%3`\n").arg(ConversationStore::tr("Called"), call.name, call.arguments);
    }
    if (m.hasStats) md += QStringLiteral("\n<!-- stats --> _%1_\n").arg(formatStats(m.stats));
  }
  return md;
}

ConversationStore::ConversationStore(QString path, QObject* parent) : QObject(parent), path_(std::move(path)) {
  load();
}

Conversation* ConversationStore::find(const QString& id) {
  for (Conversation& c : conversations_)
    if (c.id == id) return &c;
  return nullptr;
}

QString ConversationStore::create() {
  Conversation c;
  c.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
  c.title = tr("New chat");
  c.updated = QDateTime::currentDateTime();
  conversations_.prepend(c);
  save();
  emit changed();
  return c.id;
}

void ConversationStore::remove(const QString& id) {
  conversations_.removeIf([&](const Conversation& c) { return c.id == id; });
  save();
  emit changed();
}

void ConversationStore::update(const Conversation& updated) {
  for (Conversation& c : conversations_) {
    if (c.id != updated.id) continue;
    c = updated;
    c.updated = QDateTime::currentDateTime();
    std::stable_sort(conversations_.begin(), conversations_.end(),
                     [](const Conversation& a, const Conversation& b) { return a.updated > b.updated; });
    save();
    emit changed();
    return;
  }
}

void ConversationStore::rename(const QString& id, const QString& title) {
  Conversation* c = find(id);
  const QString t = title.simplified();
  if (!c || t.isEmpty() || c->title == t) return;
  c->title = t;
  save();
  emit changed();
}

void ConversationStore::setSettings(const QString& id, const ChatSettings& settings) {
  Conversation* c = find(id);
  if (!c || c->settings == settings) return;
  c->settings = settings;
  save();
}

void ConversationStore::setReasoningExpanded(const QString& id, int message, bool expanded) {
  Conversation* c = find(id);
  if (!c || message < 0 || message >= c->messages.size() || c->messages[message].reasoningExpanded == expanded) return;
  c->messages[message].reasoningExpanded = expanded;
  save();
}

QStringList ConversationStore::search(const QString& text) const {
  QStringList ids;
  const QString needle = text.trimmed();
  for (const Conversation& c : conversations_) {
    bool hit = needle.isEmpty() || c.title.contains(needle, Qt::CaseInsensitive);
    for (int i = 0; !hit && i < c.messages.size(); ++i)
      hit = c.messages[i].content.contains(needle, Qt::CaseInsensitive) ||
            c.messages[i].reasoning.contains(needle, Qt::CaseInsensitive);
    if (hit) ids << c.id;
  }
  return ids;
}

bool ConversationStore::exportConversation(const QString& id, const QString& file, const QString& format,
                                           QString* error) const {
  const auto it =
      std::find_if(conversations_.begin(), conversations_.end(), [&](const Conversation& c) { return c.id == id; });
  if (it == conversations_.end()) {
    if (error) *error = tr("There is no such conversation.");
    return false;
  }
  QByteArray bytes;
  if (format == QLatin1String("json"))
    bytes =
        QJsonDocument(QJsonObject{{"format", kExportFormat}, {"version", 1}, {"conversation", conversationToJson(*it)}})
            .toJson(QJsonDocument::Indented);
  else if (format == QLatin1String("markdown")) bytes = conversationToMarkdown(*it).toUtf8();
  else {
    if (error) *error = tr("Unknown export format '%1' (markdown or json).").arg(format);
    return false;
  }
  QSaveFile f(file);
  if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit()) {
    if (error) *error = tr("Cannot write %1: %2").arg(file, f.errorString());
    return false;
  }
  return true;
}

QStringList ConversationStore::importConversations(const QString& file, QString* error) {
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = tr("Cannot read %1: %2").arg(file, f.errorString());
    return {};
  }
  const QByteArray bytes = f.readAll();
  QList<Conversation> found;
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &err);
  if (err.error == QJsonParseError::NoError && doc.isObject()) {
    const QJsonObject o = doc.object();
    if (o.value("format").toString() == kExportFormat && o.value("conversation").isObject())
      found << conversationFromJson(o.value("conversation").toObject());
    else if (o.value("conversations").isArray())  // a whole conversations.json
      for (const QJsonValue& v : o.value("conversations").toArray()) found << conversationFromJson(v.toObject());
    else if (o.value("messages").isArray() && !o.value("messages").toArray().isEmpty()) {
      // An OpenAI-style request or transcript, such as an agent sends: its messages, with no
      // figures or settings (a first system message becomes the chat's system prompt).
      Conversation c = conversationFromJson(QJsonObject{{"messages", o.value("messages")}});
      c.messages.removeIf([](const StoredMessage& m) {
        return m.role != QLatin1String("user") && m.role != QLatin1String("assistant") &&
               m.role != QLatin1String("system") && m.role != QLatin1String("tool");
      });
      if (!c.messages.isEmpty() && c.messages.first().role == QLatin1String("system")) {
        c.settings.systemPrompt = c.messages.first().content;
        c.messages.removeFirst();
      }
      for (const StoredMessage& m : c.messages)
        if (m.role == QLatin1String("user")) {
          c.title = m.content.left(48).simplified();
          break;
        }
      if (!c.messages.isEmpty()) found << c;
    }
  } else {
    Conversation c;
    if (conversationFromMarkdown(QString::fromUtf8(bytes), &c)) found << c;
  }
  if (found.isEmpty()) {
    if (error)
      *error = tr("%1 is not a conversation exported by Deltafin Studio (Markdown or JSON).")
                   .arg(QFileInfo(file).fileName());
    return {};
  }
  QStringList ids;
  for (Conversation& c : found) {
    // New ids: importing the same file twice gives two chats, never a silently replaced one.
    c.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    if (c.title.isEmpty()) c.title = QFileInfo(file).completeBaseName();
    if (!c.updated.isValid()) c.updated = QDateTime::currentDateTime();
    ids << c.id;
    conversations_.prepend(c);
  }
  save();
  emit changed();
  return ids;
}

void ConversationStore::load() {
  QFile f(path_);
  if (!f.exists()) return;
  if (!f.open(QIODevice::ReadOnly)) {
    loadError_ = tr("Cannot read %1: %2").arg(path_, f.errorString());
    return;
  }
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
  if (err.error != QJsonParseError::NoError) {
    // Keep the unreadable file for the user instead of overwriting it on the next save.
    QFile::rename(path_, path_ + QStringLiteral(".broken"));
    loadError_ = tr("%1 was damaged (%2); it was kept as %1.broken").arg(path_, err.errorString());
    return;
  }
  for (const QJsonValue& v : doc.object().value("conversations").toArray()) {
    Conversation c = conversationFromJson(v.toObject());
    if (!c.id.isEmpty()) conversations_.push_back(c);
  }
}

void ConversationStore::save() {
  QJsonArray list;
  for (const Conversation& c : conversations_) list.push_back(conversationToJson(c));
  QDir().mkpath(QFileInfo(path_).absolutePath());
  QSaveFile f(path_);
  if (!f.open(QIODevice::WriteOnly)) return;
  f.write(QJsonDocument(QJsonObject{{"version", 1}, {"conversations", list}}).toJson(QJsonDocument::Indented));
  f.commit();
}

}  // namespace deltafin::gui
