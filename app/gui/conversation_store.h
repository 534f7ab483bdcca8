#pragma once
// Conversations shown in the chat sidebar, kept as one JSON file so they survive restarts.
#include <QDateTime>
#include <QList>
#include <QObject>
#include <QString>

#include "chat_types.h"

namespace deltafin::gui {

struct StoredMessage {
  QString role;  // "user" or "assistant"
  QString content;
  QString reasoning;
  bool hasStats = false;
  GenerationStats stats;
  QString error;  // why the reply failed, when it did
};

struct Conversation {
  QString id;
  QString title;
  QDateTime updated;
  QList<StoredMessage> messages;
};

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
