#pragma once
// The chat: conversations in a sidebar (search, rename, export and import), the transcript, the
// input (Enter sends, Shift+Enter starts a new line; or Ctrl+Enter sends, by setting), and a side
// panel with the chat's own system prompt, sampling and reasoning effort.
#include <QPointer>
#include <QWidget>

#include "chat_backend.h"
#include "conversation_store.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QSplitter;
class QToolButton;
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
  // true: Enter sends and Shift+Enter starts a new line; false: Enter starts a new line and
  // Ctrl+Enter sends. Ctrl+Enter sends either way.
  void setEnterSends(bool enterSends);
  bool enterSends() const { return enterSends_; }
  bool isGenerating() const { return requestId_ != 0; }

  // For keyboard users and tests.
  QPlainTextEdit* input() const { return input_; }
  QPushButton* sendButton() const { return send_; }
  QPushButton* stopButton() const { return stop_; }
  QListWidget* conversationList() const { return list_; }
  QLineEdit* searchBox() const { return search_; }
  QCheckBox* thinkingBox() const { return thinking_; }
  QToolButton* optionsButton() const { return optionsToggle_; }
  QWidget* optionsPanel() const { return options_; }
  QSplitter* splitter() const { return splitter_; }
  QList<MessageWidget*> messageWidgets() const;
  QString currentConversationId() const { return currentId_; }
  // The request the next reply would send, from the current chat and its settings.
  GenerationRequest pendingRequest() const;

  bool exportConversation(const QString& id, const QString& file, const QString& format, QString* error);
  // Imports a Markdown or JSON export and opens the first chat in it; false with `error` set.
  bool importConversations(const QString& file, QString* error);

 public slots:
  void newConversation();
  void send();
  void stopGenerating();
  void regenerate();
  void openConversation(const QString& id);
  void renameCurrent();                       // starts editing the title in the list
  void exportCurrent(const QString& format);  // asks where, then writes ("markdown" or "json")
  void importWithDialog();
  void focusSearch();

 signals:
  void generatingChanged(bool generating);
  void statsReported(const deltafin::gui::GenerationStats& stats);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QWidget* buildOptionsPanel();
  void showSettings(const ChatSettings& s);
  void storeSettings();
  void refreshList();
  void rebuildTranscript();
  void startReply();
  void finishReply();
  void updateButtons();
  void updateHint();
  void scrollToBottom();
  MessageWidget* addMessageWidget(const StoredMessage& m);

  ConversationStore* store_;
  QPointer<ChatBackend> backend_;
  QString currentId_;
  quint64 requestId_ = 0;
  quint64 nextRequestId_ = 1;
  int maxNewTokens_ = 256;
  bool enterSends_ = true;
  MessageWidget* streaming_ = nullptr;

  QSplitter* splitter_ = nullptr;
  QLineEdit* search_ = nullptr;
  QListWidget* list_ = nullptr;
  QPushButton* newChat_ = nullptr;
  QPushButton* deleteChat_ = nullptr;
  QToolButton* more_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QWidget* transcript_ = nullptr;
  QVBoxLayout* transcriptLayout_ = nullptr;
  QLabel* emptyHint_ = nullptr;
  QPlainTextEdit* input_ = nullptr;
  QPushButton* send_ = nullptr;
  QPushButton* stop_ = nullptr;
  QCheckBox* thinking_ = nullptr;
  QToolButton* optionsToggle_ = nullptr;
  QWidget* options_ = nullptr;
  QPlainTextEdit* systemPrompt_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QDoubleSpinBox* topP_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QComboBox* effort_ = nullptr;
  bool showingSettings_ = false;
};

}  // namespace deltafin::gui
