#include "chat_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QShortcut>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include "message_widget.h"

namespace deltafin::gui {

ChatView::ChatView(ConversationStore* store, QWidget* parent) : QWidget(parent), store_(store) {
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* splitter = new QSplitter(this);
  outer->addWidget(splitter);

  auto* side = new QWidget(splitter);
  auto* sideLayout = new QVBoxLayout(side);
  newChat_ = new QPushButton(tr("&New chat"), side);
  sideLayout->addWidget(newChat_);
  list_ = new QListWidget(side);
  list_->setObjectName(QStringLiteral("conversationList"));
  list_->setAccessibleName(tr("Conversations"));
  sideLayout->addWidget(list_, 1);
  deleteChat_ = new QPushButton(tr("Delete chat"), side);
  sideLayout->addWidget(deleteChat_);
  splitter->addWidget(side);

  auto* main = new QWidget(splitter);
  auto* mainLayout = new QVBoxLayout(main);
  scroll_ = new QScrollArea(main);
  scroll_->setWidgetResizable(true);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  transcript_ = new QWidget(scroll_);
  transcript_->setObjectName(QStringLiteral("transcript"));
  transcriptLayout_ = new QVBoxLayout(transcript_);
  transcriptLayout_->addStretch(1);
  scroll_->setWidget(transcript_);
  mainLayout->addWidget(scroll_, 1);

  emptyHint_ = new QLabel(tr("Ask K3 anything. Ctrl+Enter sends."), main);
  emptyHint_->setAlignment(Qt::AlignCenter);
  emptyHint_->setObjectName(QStringLiteral("emptyHint"));
  transcriptLayout_->insertWidget(0, emptyHint_);

  input_ = new QPlainTextEdit(main);
  input_->setObjectName(QStringLiteral("chatInput"));
  input_->setPlaceholderText(tr("Message K3…"));
  input_->setAccessibleName(tr("Message"));
  input_->setMaximumHeight(120);
  mainLayout->addWidget(input_);

  auto* buttons = new QHBoxLayout;
  thinking_ = new QCheckBox(tr("&Think first"), main);
  thinking_->setToolTip(tr("Let K3 reason before it answers; the reasoning is shown collapsed"));
  buttons->addWidget(thinking_);
  buttons->addStretch(1);
  stop_ = new QPushButton(tr("S&top"), main);
  stop_->setObjectName(QStringLiteral("stopButton"));
  buttons->addWidget(stop_);
  send_ = new QPushButton(tr("&Send"), main);
  send_->setObjectName(QStringLiteral("sendButton"));
  send_->setDefault(true);
  buttons->addWidget(send_);
  mainLayout->addLayout(buttons);
  splitter->addWidget(main);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({220, 700});

  auto* sendShortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this);
  connect(sendShortcut, &QShortcut::activated, this, &ChatView::send);
  auto* stopShortcut = new QShortcut(QKeySequence(Qt::Key_Escape), this);
  connect(stopShortcut, &QShortcut::activated, this, &ChatView::stopGenerating);

  connect(send_, &QPushButton::clicked, this, &ChatView::send);
  connect(stop_, &QPushButton::clicked, this, &ChatView::stopGenerating);
  connect(newChat_, &QPushButton::clicked, this, &ChatView::newConversation);
  connect(deleteChat_, &QPushButton::clicked, this, [this] {
    if (currentId_.isEmpty() || isGenerating()) return;
    const QString id = currentId_;
    currentId_.clear();
    store_->remove(id);
    if (!store_->conversations().isEmpty()) openConversation(store_->conversations().first().id);
    else rebuildTranscript();
  });
  connect(list_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
    if (item && !isGenerating()) openConversation(item->data(Qt::UserRole).toString());
  });
  connect(input_, &QPlainTextEdit::textChanged, this, &ChatView::updateButtons);

  refreshList();
  if (!store_->conversations().isEmpty()) openConversation(store_->conversations().first().id);
  updateButtons();
}

void ChatView::setBackend(ChatBackend* backend) {
  if (backend_) disconnect(backend_, nullptr, this, nullptr);
  if (isGenerating()) finishReply();
  backend_ = backend;
  if (!backend_) return;
  connect(backend_, &ChatBackend::chunk, this, [this](quint64 id, const QString& reasoning, const QString& answer) {
    if (id != requestId_ || !streaming_) return;
    streaming_->append(reasoning, answer);
    scrollToBottom();
  });
  connect(backend_, &ChatBackend::finished, this, [this](quint64 id, const GenerationStats& stats) {
    if (id != requestId_ || !streaming_) return;
    streaming_->setStats(stats);
    emit statsReported(stats);
    finishReply();
  });
  connect(backend_, &ChatBackend::failed, this, [this](quint64 id, const QString& what, const QString& todo) {
    if (id != requestId_ || !streaming_) return;
    streaming_->setError(todo.isEmpty() ? what : tr("%1 — %2").arg(what, todo));
    finishReply();
  });
  connect(backend_, &ChatBackend::ready, this, &ChatView::updateButtons);
  connect(backend_, &ChatBackend::unavailable, this, &ChatView::updateButtons);
  updateButtons();
}

QList<MessageWidget*> ChatView::messageWidgets() const { return transcript_->findChildren<MessageWidget*>(); }

void ChatView::newConversation() {
  if (isGenerating()) return;
  openConversation(store_->create());
  input_->setFocus();
}

void ChatView::openConversation(const QString& id) {
  if (isGenerating()) return;
  currentId_ = id;
  refreshList();
  rebuildTranscript();
}

void ChatView::send() {
  const QString text = input_->toPlainText().trimmed();
  if (text.isEmpty() || isGenerating() || !backend_ || !backend_->isReady()) return;
  if (currentId_.isEmpty() || !store_->find(currentId_)) currentId_ = store_->create();
  Conversation c = *store_->find(currentId_);
  if (c.messages.isEmpty()) c.title = text.left(48).simplified();
  StoredMessage user;
  user.role = QStringLiteral("user");
  user.content = text;
  c.messages.push_back(user);
  store_->update(c);
  input_->clear();
  refreshList();
  addMessageWidget(user);
  startReply();
}

void ChatView::regenerate() {
  if (isGenerating() || !backend_ || !backend_->isReady()) return;
  Conversation* found = store_->find(currentId_);
  if (!found || found->messages.isEmpty() || found->messages.last().role != QLatin1String("assistant")) return;
  Conversation c = *found;
  c.messages.removeLast();
  store_->update(c);
  rebuildTranscript();
  startReply();
}

void ChatView::stopGenerating() {
  if (isGenerating() && backend_) backend_->stop();
}

void ChatView::startReply() {
  const Conversation* c = store_->find(currentId_);
  GenerationRequest req;
  req.id = nextRequestId_++;
  req.thinking = thinking_->isChecked();
  req.maxNewTokens = maxNewTokens_;
  for (const StoredMessage& m : c->messages) {
    if (!m.error.isEmpty() && m.content.isEmpty()) continue;
    req.turns.push_back(ChatTurn{m.role, m.content, m.reasoning});
  }
  for (MessageWidget* w : messageWidgets()) w->setRegenerateVisible(false);
  StoredMessage reply;
  reply.role = QStringLiteral("assistant");
  streaming_ = addMessageWidget(reply);
  streaming_->setStreaming(true);
  requestId_ = req.id;
  updateButtons();
  emit generatingChanged(true);
  backend_->start(req);
}

void ChatView::finishReply() {
  if (streaming_) {
    streaming_->setStreaming(false);
    if (Conversation* found = store_->find(currentId_)) {
      Conversation c = *found;
      c.messages.push_back(streaming_->message());
      store_->update(c);
    }
    streaming_->setRegenerateVisible(true);
  }
  streaming_ = nullptr;
  requestId_ = 0;
  updateButtons();
  scrollToBottom();
  emit generatingChanged(false);
}

void ChatView::refreshList() {
  const QSignalBlocker block(list_);
  list_->clear();
  for (const Conversation& c : store_->conversations()) {
    auto* item = new QListWidgetItem(c.title.isEmpty() ? tr("Untitled") : c.title, list_);
    item->setData(Qt::UserRole, c.id);
    item->setToolTip(QLocale().toString(c.updated, QLocale::ShortFormat));
    if (c.id == currentId_) list_->setCurrentItem(item);
  }
}

void ChatView::rebuildTranscript() {
  for (MessageWidget* w : messageWidgets()) delete w;
  const Conversation* c = store_->find(currentId_);
  if (c) {
    MessageWidget* last = nullptr;
    for (const StoredMessage& m : c->messages) last = addMessageWidget(m);
    if (last && last->message().role == QLatin1String("assistant")) last->setRegenerateVisible(true);
  }
  updateButtons();
  scrollToBottom();
}

MessageWidget* ChatView::addMessageWidget(const StoredMessage& m) {
  auto* w = new MessageWidget(m, transcript_);
  connect(w, &MessageWidget::regenerateRequested, this, &ChatView::regenerate);
  transcriptLayout_->insertWidget(transcriptLayout_->count() - 1, w);
  emptyHint_->setVisible(false);
  return w;
}

void ChatView::updateButtons() {
  const bool ready = backend_ && backend_->isReady();
  send_->setEnabled(ready && !isGenerating() && !input_->toPlainText().trimmed().isEmpty());
  stop_->setEnabled(isGenerating());
  newChat_->setEnabled(!isGenerating());
  deleteChat_->setEnabled(!isGenerating() && !currentId_.isEmpty());
  list_->setEnabled(!isGenerating());
  emptyHint_->setVisible(messageWidgets().isEmpty());
}

void ChatView::scrollToBottom() {
  QTimer::singleShot(0, this, [this] { scroll_->verticalScrollBar()->setValue(scroll_->verticalScrollBar()->maximum()); });
}

}  // namespace deltafin::gui
