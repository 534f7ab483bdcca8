#include "chat_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <climits>

#include "message_widget.h"

namespace deltafin::gui {

ChatView::ChatView(ConversationStore* store, QWidget* parent) : QWidget(parent), store_(store) {
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  splitter_ = new QSplitter(this);
  splitter_->setObjectName(QStringLiteral("chatSplitter"));
  splitter_->setChildrenCollapsible(false);
  outer->addWidget(splitter_);

  auto* side = new QWidget(splitter_);
  auto* sideLayout = new QVBoxLayout(side);
  newChat_ = new QPushButton(tr("&New chat"), side);
  newChat_->setObjectName(QStringLiteral("newChat"));
  sideLayout->addWidget(newChat_);
  search_ = new QLineEdit(side);
  search_->setObjectName(QStringLiteral("conversationSearch"));
  search_->setPlaceholderText(tr("Search chats (Ctrl+F)"));
  search_->setAccessibleName(tr("Search chats"));
  search_->setClearButtonEnabled(true);
  sideLayout->addWidget(search_);
  list_ = new QListWidget(side);
  list_->setObjectName(QStringLiteral("conversationList"));
  list_->setAccessibleName(tr("Conversations"));
  list_->setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
  list_->setContextMenuPolicy(Qt::ActionsContextMenu);
  sideLayout->addWidget(list_, 1);
  auto* sideButtons = new QHBoxLayout;
  deleteChat_ = new QPushButton(tr("Delete chat"), side);
  deleteChat_->setObjectName(QStringLiteral("deleteChat"));
  sideButtons->addWidget(deleteChat_);
  more_ = new QToolButton(side);
  more_->setObjectName(QStringLiteral("chatActions"));
  more_->setText(tr("More"));
  more_->setAccessibleName(tr("More chat actions"));
  more_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(more_);
  QAction* rename = menu->addAction(tr("&Rename"), this, &ChatView::renameCurrent);
  rename->setShortcut(QKeySequence(Qt::Key_F2));
  rename->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  addAction(rename);
  menu->addSeparator();
  QAction* exportMd =
      menu->addAction(tr("Export as &Markdown…"), this, [this] { exportCurrent(QStringLiteral("markdown")); });
  QAction* exportJson =
      menu->addAction(tr("Export as &JSON…"), this, [this] { exportCurrent(QStringLiteral("json")); });
  menu->addAction(tr("&Import…"), this, &ChatView::importWithDialog);
  more_->setMenu(menu);
  list_->addActions({rename, exportMd, exportJson});
  sideButtons->addWidget(more_);
  sideLayout->addLayout(sideButtons);
  splitter_->addWidget(side);

  auto* main = new QWidget(splitter_);
  auto* mainLayout = new QVBoxLayout(main);
  scroll_ = new QScrollArea(main);
  scroll_->setWidgetResizable(true);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll_->setAccessibleName(tr("Transcript"));
  transcript_ = new QWidget(scroll_);
  transcript_->setObjectName(QStringLiteral("transcript"));
  transcriptLayout_ = new QVBoxLayout(transcript_);
  transcriptLayout_->addStretch(1);
  scroll_->setWidget(transcript_);
  mainLayout->addWidget(scroll_, 1);

  emptyHint_ = new QLabel(main);
  emptyHint_->setAlignment(Qt::AlignCenter);
  emptyHint_->setWordWrap(true);
  emptyHint_->setObjectName(QStringLiteral("emptyHint"));
  transcriptLayout_->insertWidget(0, emptyHint_);

  input_ = new QPlainTextEdit(main);
  input_->setObjectName(QStringLiteral("chatInput"));
  input_->setPlaceholderText(tr("Message K3…"));
  input_->setAccessibleName(tr("Message"));
  input_->setMaximumHeight(120);
  input_->setTabChangesFocus(true);  // Tab moves on to the buttons, as everywhere else
  input_->installEventFilter(this);
  mainLayout->addWidget(input_);

  auto* buttons = new QHBoxLayout;
  thinking_ = new QCheckBox(tr("&Think first"), main);
  thinking_->setToolTip(tr("Let K3 reason before it answers; the reasoning is shown collapsed"));
  buttons->addWidget(thinking_);
  optionsToggle_ = new QToolButton(main);
  optionsToggle_->setObjectName(QStringLiteral("chatOptionsToggle"));
  optionsToggle_->setText(tr("Chat settings"));
  optionsToggle_->setToolTip(tr("This chat's system prompt, sampling and reasoning effort"));
  optionsToggle_->setCheckable(true);
  buttons->addWidget(optionsToggle_);
  buttons->addStretch(1);
  stop_ = new QPushButton(tr("S&top"), main);
  stop_->setObjectName(QStringLiteral("stopButton"));
  stop_->setToolTip(tr("Stop the reply (Esc)"));
  buttons->addWidget(stop_);
  send_ = new QPushButton(tr("&Send"), main);
  send_->setObjectName(QStringLiteral("sendButton"));
  send_->setDefault(true);
  buttons->addWidget(send_);
  mainLayout->addLayout(buttons);
  splitter_->addWidget(main);

  options_ = buildOptionsPanel();
  splitter_->addWidget(options_);
  options_->setVisible(false);
  splitter_->setStretchFactor(0, 0);
  splitter_->setStretchFactor(1, 1);
  splitter_->setStretchFactor(2, 0);
  splitter_->setSizes({220, 700, 260});
  connect(optionsToggle_, &QToolButton::toggled, options_, &QWidget::setVisible);

  auto* stopShortcut = new QShortcut(QKeySequence(Qt::Key_Escape), this);
  connect(stopShortcut, &QShortcut::activated, this, &ChatView::stopGenerating);
  auto* findShortcut = new QShortcut(QKeySequence::Find, this);
  findShortcut->setContext(Qt::WidgetWithChildrenShortcut);
  connect(findShortcut, &QShortcut::activated, this, &ChatView::focusSearch);

  connect(send_, &QPushButton::clicked, this, &ChatView::send);
  connect(stop_, &QPushButton::clicked, this, &ChatView::stopGenerating);
  connect(newChat_, &QPushButton::clicked, this, &ChatView::newConversation);
  connect(deleteChat_, &QPushButton::clicked, this, [this] {
    if (currentId_.isEmpty() || isGenerating()) return;
    const QString id = currentId_;
    currentId_.clear();
    store_->remove(id);
    if (!store_->conversations().isEmpty()) openConversation(store_->conversations().first().id);
    else {
      refreshList();
      rebuildTranscript();
    }
  });
  connect(list_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
    if (item && !isGenerating()) openConversation(item->data(Qt::UserRole).toString());
  });
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    const QString id = item->data(Qt::UserRole).toString();
    if (item->text().simplified().isEmpty()) {
      // An empty title is not kept: the old one comes back (after this signal, not inside it).
      QTimer::singleShot(0, this, &ChatView::refreshList);
      return;
    }
    store_->rename(id, item->text());
  });
  connect(search_, &QLineEdit::textChanged, this, &ChatView::refreshList);
  connect(input_, &QPlainTextEdit::textChanged, this, &ChatView::updateButtons);

  refreshList();
  if (!store_->conversations().isEmpty()) openConversation(store_->conversations().first().id);
  updateHint();
  updateButtons();
}

QWidget* ChatView::buildOptionsPanel() {
  auto* panel = new QWidget(splitter_);
  panel->setObjectName(QStringLiteral("chatOptionsPanel"));
  panel->setAccessibleName(tr("Chat settings"));
  auto* layout = new QVBoxLayout(panel);
  auto* title = new QLabel(tr("<b>This chat</b>"), panel);
  layout->addWidget(title);
  auto* promptLabel = new QLabel(tr("S&ystem prompt:"), panel);
  layout->addWidget(promptLabel);
  systemPrompt_ = new QPlainTextEdit(panel);
  systemPrompt_->setObjectName(QStringLiteral("systemPrompt"));
  systemPrompt_->setAccessibleName(tr("System prompt"));
  systemPrompt_->setPlaceholderText(tr("Instructions K3 follows in this chat"));
  systemPrompt_->setTabChangesFocus(true);
  promptLabel->setBuddy(systemPrompt_);
  layout->addWidget(systemPrompt_, 1);
  auto* form = new QFormLayout;
  temperature_ = new QDoubleSpinBox(panel);
  temperature_->setObjectName(QStringLiteral("temperature"));
  temperature_->setRange(0, 2);
  temperature_->setSingleStep(0.1);
  temperature_->setDecimals(2);
  temperature_->setSpecialValueText(tr("0 (greedy)"));
  temperature_->setToolTip(tr("0 always picks the most likely token; higher values sample more freely"));
  form->addRow(tr("T&emperature:"), temperature_);
  topP_ = new QDoubleSpinBox(panel);
  topP_->setObjectName(QStringLiteral("topP"));
  topP_->setRange(0.01, 1);
  topP_->setSingleStep(0.05);
  topP_->setDecimals(2);
  topP_->setToolTip(tr("Sample only from the most likely tokens that together have this probability"));
  form->addRow(tr("To&p-p:"), topP_);
  seed_ = new QSpinBox(panel);
  seed_->setObjectName(QStringLiteral("seed"));
  seed_->setRange(0, INT_MAX);
  seed_->setToolTip(tr("The same seed and settings give the same reply"));
  form->addRow(tr("See&d:"), seed_);
  effort_ = new QComboBox(panel);
  effort_->setObjectName(QStringLiteral("effort"));
  effort_->addItem(tr("Model default"), QString());
  effort_->addItem(tr("Low"), QStringLiteral("low"));
  effort_->addItem(tr("High"), QStringLiteral("high"));
  effort_->addItem(tr("Max"), QStringLiteral("max"));
  effort_->setToolTip(tr("How long K3 reasons with \"Think first\" on"));
  form->addRow(tr("Thinking e&ffort:"), effort_);
  layout->addLayout(form);

  connect(systemPrompt_, &QPlainTextEdit::textChanged, this, &ChatView::storeSettings);
  connect(temperature_, &QDoubleSpinBox::valueChanged, this, &ChatView::storeSettings);
  connect(topP_, &QDoubleSpinBox::valueChanged, this, &ChatView::storeSettings);
  connect(seed_, &QSpinBox::valueChanged, this, &ChatView::storeSettings);
  connect(effort_, &QComboBox::currentIndexChanged, this, &ChatView::storeSettings);
  showSettings(ChatSettings{});
  return panel;
}

void ChatView::showSettings(const ChatSettings& s) {
  showingSettings_ = true;
  if (systemPrompt_->toPlainText() != s.systemPrompt) systemPrompt_->setPlainText(s.systemPrompt);
  temperature_->setValue(s.temperature);
  topP_->setValue(s.topP);
  seed_->setValue(static_cast<int>(std::min<quint64>(s.seed, INT_MAX)));
  effort_->setCurrentIndex(std::max(0, effort_->findData(s.effort)));
  showingSettings_ = false;
}

void ChatView::storeSettings() {
  if (showingSettings_ || currentId_.isEmpty()) return;  // a new chat takes them when it is created
  ChatSettings s;
  s.systemPrompt = systemPrompt_->toPlainText();
  s.temperature = temperature_->value();
  s.topP = topP_->value();
  s.seed = static_cast<quint64>(seed_->value());
  s.effort = effort_->currentData().toString();
  store_->setSettings(currentId_, s);
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
  connect(backend_, &ChatBackend::toolCall, this, [this](quint64 id, const ToolCallInfo& call) {
    if (id != requestId_ || !streaming_) return;
    streaming_->addToolCall(call);
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

void ChatView::setEnterSends(bool enterSends) {
  enterSends_ = enterSends;
  updateHint();
}

bool ChatView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == input_ && event->type() == QEvent::KeyPress) {
    const auto* key = static_cast<QKeyEvent*>(event);
    if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
      const Qt::KeyboardModifiers mods = key->modifiers() & ~Qt::KeypadModifier;
      if (mods == Qt::ControlModifier || (enterSends_ && mods == Qt::NoModifier)) {
        send();
        return true;
      }
      if (enterSends_ && mods == Qt::ShiftModifier) {
        // A plain new line (the text edit would insert a soft line break for Shift+Enter).
        input_->insertPlainText(QStringLiteral("\n"));
        return true;
      }
    }
  }
  return QWidget::eventFilter(watched, event);
}

QList<MessageWidget*> ChatView::messageWidgets() const { return transcript_->findChildren<MessageWidget*>(); }

void ChatView::newConversation() {
  if (isGenerating()) return;
  search_->clear();
  openConversation(store_->create());
  input_->setFocus();
}

void ChatView::openConversation(const QString& id) {
  if (isGenerating()) return;
  currentId_ = id;
  if (const Conversation* c = store_->find(id)) showSettings(c->settings);
  refreshList();
  rebuildTranscript();
}

void ChatView::renameCurrent() {
  QListWidgetItem* item = list_->currentItem();
  if (!item || isGenerating()) return;
  list_->setFocus();
  list_->editItem(item);
}

void ChatView::focusSearch() {
  search_->setFocus();
  search_->selectAll();
}

bool ChatView::exportConversation(const QString& id, const QString& file, const QString& format, QString* error) {
  return store_->exportConversation(id, file, format, error);
}

bool ChatView::importConversations(const QString& file, QString* error) {
  if (isGenerating()) {
    if (error) *error = tr("Wait for the reply to finish, then import.");
    return false;
  }
  const QStringList ids = store_->importConversations(file, error);
  if (ids.isEmpty()) return false;
  search_->clear();
  openConversation(ids.first());
  return true;
}

void ChatView::exportCurrent(const QString& format) {
  const Conversation* c = store_->find(currentId_);
  if (!c) return;
  const bool markdown = format == QLatin1String("markdown");
  QString name = c->title.simplified();
  name.replace(QRegularExpression(QStringLiteral("[/\\\\:*?\"<>|]")), QStringLiteral("-"));
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  const QString file = QFileDialog::getSaveFileName(
      this, markdown ? tr("Export as Markdown") : tr("Export as JSON"),
      dir + QLatin1Char('/') + (name.isEmpty() ? QStringLiteral("chat") : name) + (markdown ? ".md" : ".json"),
      markdown ? tr("Markdown (*.md)") : tr("JSON (*.json)"));
  if (file.isEmpty()) return;
  QString error;
  if (!exportConversation(currentId_, file, format, &error)) QMessageBox::warning(this, tr("Export failed"), error);
}

void ChatView::importWithDialog() {
  const QString file = QFileDialog::getOpenFileName(this, tr("Import a chat"),
                                                    QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation),
                                                    tr("Chats (*.md *.json);;All files (*)"));
  if (file.isEmpty()) return;
  QString error;
  if (!importConversations(file, &error)) QMessageBox::warning(this, tr("Import failed"), error);
}

void ChatView::send() {
  const QString text = input_->toPlainText().trimmed();
  if (text.isEmpty() || isGenerating() || !backend_ || !backend_->isReady()) return;
  if (currentId_.isEmpty() || !store_->find(currentId_)) {
    currentId_ = store_->create();
    storeSettings();  // what the panel shows becomes this chat's
  }
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

GenerationRequest ChatView::pendingRequest() const {
  GenerationRequest req;
  req.thinking = thinking_->isChecked();
  req.maxNewTokens = maxNewTokens_;
  req.temperature = temperature_->value();
  req.topP = topP_->value();
  req.seed = static_cast<quint64>(seed_->value());
  req.effort = effort_->currentData().toString();
  const QString system = systemPrompt_->toPlainText().trimmed();
  if (!system.isEmpty()) req.turns.push_back(ChatTurn{QStringLiteral("system"), system, QString(), {}, {}, {}});
  const Conversation* c = const_cast<ConversationStore*>(store_)->find(currentId_);
  if (!c) return req;
  for (const StoredMessage& m : c->messages) {
    if (!m.error.isEmpty() && m.content.isEmpty() && m.toolCalls.isEmpty()) continue;
    req.turns.push_back(ChatTurn{m.role, m.content, m.reasoning, m.toolCalls, m.toolCallId, m.toolName});
  }
  return req;
}

void ChatView::startReply() {
  GenerationRequest req = pendingRequest();
  req.id = nextRequestId_++;
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
  refreshList();
  scrollToBottom();
  emit generatingChanged(false);
}

void ChatView::refreshList() {
  const QSignalBlocker block(list_);
  list_->clear();
  const QStringList shown = store_->search(search_->text());
  for (const Conversation& c : store_->conversations()) {
    if (!shown.contains(c.id)) continue;
    auto* item = new QListWidgetItem(c.title.isEmpty() ? tr("Untitled") : c.title, list_);
    item->setData(Qt::UserRole, c.id);
    item->setFlags(item->flags() | Qt::ItemIsEditable);
    item->setToolTip(tr("%1 · %n message(s) · F2 renames", nullptr, static_cast<int>(c.messages.size()))
                         .arg(QLocale().toString(c.updated, QLocale::ShortFormat)));
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
  // Remembered with the message, so the chat reopens as it was left.
  connect(w, &MessageWidget::reasoningToggled, this, [this, w](bool expanded) {
    store_->setReasoningExpanded(currentId_, static_cast<int>(messageWidgets().indexOf(w)), expanded);
  });
  transcriptLayout_->insertWidget(transcriptLayout_->count() - 1, w);
  emptyHint_->setVisible(false);
  return w;
}

void ChatView::updateHint() {
  emptyHint_->setText(enterSends_ ? tr("Ask K3 anything. Enter sends, Shift+Enter starts a new line.")
                                  : tr("Ask K3 anything. Ctrl+Enter sends."));
}

void ChatView::updateButtons() {
  const bool ready = backend_ && backend_->isReady();
  send_->setEnabled(ready && !isGenerating() && !input_->toPlainText().trimmed().isEmpty());
  send_->setToolTip(enterSends_ ? tr("Send (Enter)") : tr("Send (Ctrl+Enter)"));
  stop_->setEnabled(isGenerating());
  newChat_->setEnabled(!isGenerating());
  deleteChat_->setEnabled(!isGenerating() && !currentId_.isEmpty());
  more_->setEnabled(!isGenerating());
  list_->setEnabled(!isGenerating());
  emptyHint_->setVisible(messageWidgets().isEmpty());
}

void ChatView::scrollToBottom() {
  QTimer::singleShot(0, this,
                     [this] { scroll_->verticalScrollBar()->setValue(scroll_->verticalScrollBar()->maximum()); });
}

}  // namespace deltafin::gui
