#include "message_widget.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QJsonDocument>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

#include "formatting.h"

namespace deltafin::gui {

MessageWidget::MessageWidget(const StoredMessage& message, QWidget* parent) : QFrame(parent), message_(message) {
  const bool user = message_.role == QLatin1String("user");
  const bool tool = message_.role == QLatin1String("tool");
  const bool system = message_.role == QLatin1String("system");
  setObjectName(user     ? QStringLiteral("userMessage")
                : tool   ? QStringLiteral("toolMessage")
                : system ? QStringLiteral("systemMessage")
                         : QStringLiteral("assistantMessage"));
  setFrameShape(QFrame::StyledPanel);

  auto* layout = new QVBoxLayout(this);
  auto* header = new QHBoxLayout;
  role_ = new QLabel(user     ? tr("You")
                     : tool   ? tr("Tool result · %1").arg(message_.toolName)
                     : system ? tr("System")
                              : tr("K3"),
                     this);
  if (tool && !message_.toolCallId.isEmpty()) role_->setToolTip(tr("The result of call %1").arg(message_.toolCallId));
  role_->setObjectName(QStringLiteral("messageRole"));
  header->addWidget(role_);
  header->addStretch(1);
  copy_ = new QToolButton(this);
  copy_->setText(tr("Copy"));
  copy_->setAccessibleName(tr("Copy this message"));
  copy_->setToolTip(tr("Copy this message as Markdown"));
  connect(copy_, &QToolButton::clicked, this, [this] { QApplication::clipboard()->setText(message_.content); });
  header->addWidget(copy_);
  regenerate_ = new QToolButton(this);
  regenerate_->setText(tr("Regenerate"));
  regenerate_->setAccessibleName(tr("Regenerate this answer"));
  regenerate_->setToolTip(tr("Replace this answer with a new one"));
  regenerate_->setVisible(false);
  connect(regenerate_, &QToolButton::clicked, this, &MessageWidget::regenerateRequested);
  header->addWidget(regenerate_);
  layout->addLayout(header);

  reasoningToggle_ = new QToolButton(this);
  reasoningToggle_->setObjectName(QStringLiteral("reasoningToggle"));
  reasoningToggle_->setCheckable(true);
  reasoningToggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  reasoningToggle_->setArrowType(Qt::RightArrow);
  reasoningToggle_->setText(tr("Reasoning"));
  reasoningToggle_->setAutoRaise(true);
  layout->addWidget(reasoningToggle_);
  reasoning_ = new QLabel(this);
  reasoning_->setObjectName(QStringLiteral("reasoningText"));
  reasoning_->setWordWrap(true);
  reasoning_->setTextFormat(Qt::PlainText);
  reasoning_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  reasoning_->setVisible(false);
  layout->addWidget(reasoning_);
  reasoningToggle_->setAccessibleName(tr("Show the reasoning"));
  auto showReasoning = [this](bool on) {
    reasoningToggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    reasoning_->setVisible(on);
  };
  reasoningToggle_->setChecked(message_.reasoningExpanded);
  showReasoning(message_.reasoningExpanded);
  connect(reasoningToggle_, &QToolButton::toggled, this, [this, showReasoning](bool on) {
    showReasoning(on);
    message_.reasoningExpanded = on;
    emit reasoningToggled(on);
  });

  answer_ = new QLabel(this);
  answer_->setObjectName(QStringLiteral("answerText"));
  answer_->setWordWrap(true);
  // A tool's output is data (often JSON), shown as it came.
  answer_->setTextFormat(user || tool || system ? Qt::PlainText : Qt::MarkdownText);
  answer_->setTextInteractionFlags(Qt::TextBrowserInteraction | Qt::TextSelectableByKeyboard);
  answer_->setOpenExternalLinks(true);
  answer_->setAccessibleName(user     ? tr("Your message")
                             : tool   ? tr("Tool result")
                             : system ? tr("System message")
                                      : tr("K3's answer"));
  if (tool) answer_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  layout->addWidget(answer_);

  // The tools the model called, one line each: the tool and its arguments.
  toolCalls_ = new QVBoxLayout;
  layout->addLayout(toolCalls_);

  error_ = new QLabel(this);
  error_->setObjectName(QStringLiteral("messageError"));
  error_->setWordWrap(true);
  error_->setVisible(false);
  layout->addWidget(error_);

  stats_ = new QLabel(this);
  stats_->setObjectName(QStringLiteral("messageStats"));
  stats_->setVisible(false);
  layout->addWidget(stats_);

  // One render per frame however many chunks arrived in it.
  frame_.setSingleShot(true);
  frame_.setInterval(16);
  connect(&frame_, &QTimer::timeout, this, &MessageWidget::render);

  render();
  for (const ToolCallInfo& call : message_.toolCalls) addToolCallLabel(call);
  if (message_.hasStats) setStats(message_.stats);
  if (!message_.error.isEmpty()) setError(message_.error);
}

void MessageWidget::addToolCall(const ToolCallInfo& call) {
  message_.toolCalls.push_back(call);
  addToolCallLabel(call);
}

void MessageWidget::addToolCallLabel(const ToolCallInfo& call) {
  auto* label = new QLabel(this);
  label->setObjectName(QStringLiteral("toolCall"));
  label->setWordWrap(true);
  label->setTextFormat(Qt::PlainText);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  label->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  // Arguments indented when they are JSON, as written otherwise.
  const QJsonDocument args = QJsonDocument::fromJson(call.arguments.toUtf8());
  const QString shown =
      args.isObject() ? QString::fromUtf8(args.toJson(QJsonDocument::Indented)).trimmed() : call.arguments;
  label->setText(tr("Called %1").arg(call.name) + (shown.isEmpty() ? QString() : QStringLiteral("\n") + shown));
  label->setAccessibleName(tr("Tool call: %1").arg(call.name));
  if (!call.id.isEmpty()) label->setToolTip(tr("Call %1").arg(call.id));
  toolCalls_->addWidget(label);
}

QList<QLabel*> MessageWidget::toolCallLabels() const {
  QList<QLabel*> out;
  for (int i = 0; i < toolCalls_->count(); ++i)
    if (auto* l = qobject_cast<QLabel*>(toolCalls_->itemAt(i)->widget())) out << l;
  return out;
}

void MessageWidget::append(const QString& reasoning, const QString& answer) {
  message_.reasoning += reasoning;
  message_.content += answer;
  if (!frame_.isActive()) frame_.start();
}

void MessageWidget::setStats(const GenerationStats& stats) {
  message_.hasStats = true;
  message_.stats = stats;
  stats_->setText(formatStats(stats));
  stats_->setToolTip(tr("Prompt: %1 tokens at %2 tok/s; total %3 s")
                         .arg(stats.promptTokens)
                         .arg(stats.prefillTokensPerSecond, 0, 'f', 1)
                         .arg(stats.totalSeconds, 0, 'f', 2));
  stats_->setVisible(true);
}

void MessageWidget::setError(const QString& error) {
  message_.error = error;
  error_->setText(error);
  error_->setVisible(!error.isEmpty());
}

void MessageWidget::setStreaming(bool streaming) {
  streaming_ = streaming;
  if (!streaming) {
    frame_.stop();
    render();
  }
  copy_->setEnabled(!streaming);
}

void MessageWidget::setRegenerateVisible(bool visible) { regenerate_->setVisible(visible); }

bool MessageWidget::reasoningExpanded() const { return reasoningToggle_->isChecked(); }

void MessageWidget::render() {
  answer_->setText(message_.content);
  reasoning_->setText(message_.reasoning);
  reasoningToggle_->setVisible(!message_.reasoning.isEmpty());
  answer_->setVisible(!message_.content.isEmpty() || (streaming_ && message_.toolCalls.isEmpty()));
}

}  // namespace deltafin::gui
