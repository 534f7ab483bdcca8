#pragma once
// One message in the transcript: Markdown answer, a collapsible reasoning section (opened or
// closed as the message was left), the tools the model called (or, for a tool message, the tool's
// result as plain text), the
// reply's speed figures, and copy/regenerate actions. Streamed text is gathered and
// re-rendered at most once per frame.
#include <QFrame>
#include <QTimer>

#include "conversation_store.h"

class QLabel;
class QToolButton;
class QVBoxLayout;

namespace deltafin::gui {

class MessageWidget : public QFrame {
  Q_OBJECT
 public:
  explicit MessageWidget(const StoredMessage& message, QWidget* parent = nullptr);

  void append(const QString& reasoning, const QString& answer);
  // A tool the model called: shown under the answer and kept with the message.
  void addToolCall(const ToolCallInfo& call);
  QList<QLabel*> toolCallLabels() const;
  void setStats(const GenerationStats& stats);
  void setError(const QString& error);
  void setStreaming(bool streaming);
  void setRegenerateVisible(bool visible);

  const StoredMessage& message() const { return message_; }
  QString answerText() const { return message_.content; }
  bool reasoningExpanded() const;
  QToolButton* reasoningToggle() const { return reasoningToggle_; }

 signals:
  void regenerateRequested();
  void reasoningToggled(bool expanded);  // by the user; the state is in message().reasoningExpanded

 private:
  void render();
  void addToolCallLabel(const ToolCallInfo& call);

  StoredMessage message_;
  QLabel* role_ = nullptr;
  QToolButton* reasoningToggle_ = nullptr;
  QLabel* reasoning_ = nullptr;
  QLabel* answer_ = nullptr;
  QVBoxLayout* toolCalls_ = nullptr;
  QLabel* stats_ = nullptr;
  QLabel* error_ = nullptr;
  QToolButton* copy_ = nullptr;
  QToolButton* regenerate_ = nullptr;
  QTimer frame_;
  bool streaming_ = false;
};

}  // namespace deltafin::gui
