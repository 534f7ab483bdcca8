#pragma once
// What the chat view talks to: the local engine on its worker thread, or a remote
// OpenAI-compatible endpoint. Signals always arrive on the GUI thread.
#include <QObject>

#include "chat_types.h"

namespace deltafin::gui {

class ChatBackend : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  ~ChatBackend() override = default;

  // Starts one reply; chunks and tool calls, then exactly one of finished/failed, follow for
  // `request.id`.
  virtual void start(const GenerationRequest& request) = 0;
  // Ends the running reply early; it still finishes with the text produced so far.
  virtual void stop() = 0;
  virtual bool isReady() const = 0;
  virtual BackendInfo info() const = 0;

 signals:
  void ready(const deltafin::gui::BackendInfo& info);
  void unavailable(const QString& whatFailed, const QString& whatToDo);
  void chunk(quint64 id, const QString& reasoning, const QString& answer);
  // A complete call of a tool the model made (after the reply's text so far), in call order.
  void toolCall(quint64 id, const deltafin::gui::ToolCallInfo& call);
  void finished(quint64 id, const deltafin::gui::GenerationStats& stats);
  void failed(quint64 id, const QString& whatFailed, const QString& whatToDo);
  void countersChanged(const deltafin::gui::CacheCounters& counters);
};

}  // namespace deltafin::gui
