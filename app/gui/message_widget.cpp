#include "message_widget.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

#include "formatting.h"

namespace deltafin::gui {

MessageWidget::MessageWidget(const StoredMessage& message, QWidget* parent) : QFrame(parent), message_(message) {
  const bool user = message_.role == QLatin1String("user");
  setObjectName(user ? QStringLiteral("userMessage") : QStringLiteral("assistantMessage"));
  setFrameShape(QFrame::StyledPanel);

  auto* layout = new QVBoxLayout(this);
  auto* header = new QHBoxLayout;
  role_ = new QLabel(user ? tr("You") : tr("K3"), this);
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
  answer_->setTextFormat(user ? Qt::PlainText : Qt::MarkdownText);
  answer_->setTextInteractionFlags(Qt::TextBrowserInteraction | Qt::TextSelectableByKeyboard);
  answer_->setOpenExternalLinks(true);
  answer_->setAccessibleName(user ? tr("Your message") : tr("K3's answer"));
  layout->addWidget(answer_);

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
  if (message_.hasStats) setStats(message_.stats);
  if (!message_.error.isEmpty()) setError(message_.error);
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
  answer_->setVisible(!message_.content.isEmpty() || streaming_);
}

}  // namespace deltafin::gui
