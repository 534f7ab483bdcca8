#pragma once
// The chat: conversations in a sidebar, the transcript, and the input with send/stop.
#include <QPointer>
#include <QWidget>

#include "chat_backend.h"
#include "conversation_store.h"

class QCheckBox;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QVBoxLayout;
class QLabel;

namespace deltafin::gui {

class MessageWidget;

class ChatView : public QWidget {
  Q_OBJECT
 public:
  ChatView(ConversationStore* store, QWidget* parent = nullptr);

  void setBackend(ChatBackend* backend);
  void setMaxNewTokens(int n) { maxNewTokens_ = n; }
  bool isGenerating() const { return requestId_ != 0; }

  // For keyboard users and tests.
  QPlainTextEdit* input() const { return input_; }
  QPushButton* sendButton() const { return send_; }
  QPushButton* stopButton() const { return stop_; }
  QListWidget* conversationList() const { return list_; }
  QCheckBox* thinkingBox() const { return thinking_; }
  QList<MessageWidget*> messageWidgets() const;
  QString currentConversationId() const { return currentId_; }

 public slots:
  void newConversation();
  void send();
  void stopGenerating();
  void regenerate();
  void openConversation(const QString& id);

 signals:
  void generatingChanged(bool generating);
  void statsReported(const deltafin::gui::GenerationStats& stats);

 private:
  void refreshList();
  void rebuildTranscript();
  void startReply();
  void finishReply();
  void updateButtons();
  void scrollToBottom();
  MessageWidget* addMessageWidget(const StoredMessage& m);

  ConversationStore* store_;
  QPointer<ChatBackend> backend_;
  QString currentId_;
  quint64 requestId_ = 0;
  quint64 nextRequestId_ = 1;
  int maxNewTokens_ = 256;
  MessageWidget* streaming_ = nullptr;

  QListWidget* list_ = nullptr;
  QPushButton* newChat_ = nullptr;
  QPushButton* deleteChat_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QWidget* transcript_ = nullptr;
  QVBoxLayout* transcriptLayout_ = nullptr;
  QLabel* emptyHint_ = nullptr;
  QPlainTextEdit* input_ = nullptr;
  QPushButton* send_ = nullptr;
  QPushButton* stop_ = nullptr;
  QCheckBox* thinking_ = nullptr;
};

}  // namespace deltafin::gui
