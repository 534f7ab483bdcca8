#include "conversation_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QUuid>

#include <algorithm>

namespace deltafin::gui {
namespace {

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

}  // namespace

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
    const QJsonObject o = v.toObject();
    Conversation c;
    c.id = o.value("id").toString();
    c.title = o.value("title").toString();
    c.updated = QDateTime::fromString(o.value("updated").toString(), Qt::ISODate);
    for (const QJsonValue& mv : o.value("messages").toArray()) {
      const QJsonObject m = mv.toObject();
      StoredMessage sm;
      sm.role = m.value("role").toString();
      sm.content = m.value("content").toString();
      sm.reasoning = m.value("reasoning").toString();
      sm.error = m.value("error").toString();
      if (m.contains("stats")) {
        sm.hasStats = true;
        sm.stats = statsFromJson(m.value("stats").toObject());
      }
      c.messages.push_back(sm);
    }
    if (!c.id.isEmpty()) conversations_.push_back(c);
  }
}

void ConversationStore::save() {
  QJsonArray list;
  for (const Conversation& c : conversations_) {
    QJsonArray msgs;
    for (const StoredMessage& m : c.messages) {
      QJsonObject o{{"role", m.role}, {"content", m.content}};
      if (!m.reasoning.isEmpty()) o.insert("reasoning", m.reasoning);
      if (!m.error.isEmpty()) o.insert("error", m.error);
      if (m.hasStats) o.insert("stats", statsToJson(m.stats));
      msgs.push_back(o);
    }
    list.push_back(QJsonObject{{"id", c.id},
                               {"title", c.title},
                               {"updated", c.updated.toString(Qt::ISODate)},
                               {"messages", msgs}});
  }
  QDir().mkpath(QFileInfo(path_).absolutePath());
  QSaveFile f(path_);
  if (!f.open(QIODevice::WriteOnly)) return;
  f.write(QJsonDocument(QJsonObject{{"version", 1}, {"conversations", list}}).toJson(QJsonDocument::Indented));
  f.commit();
}

}  // namespace deltafin::gui
