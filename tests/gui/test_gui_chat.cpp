// The chat as people use chat apps: Enter sends and Shift+Enter starts a new line (or Ctrl+Enter
// sends, by setting); conversations renamed, searched, exported as Markdown and JSON and imported
// back; a chat's own system prompt, sampling and reasoning effort reaching the engine; the
// reasoning section reopening as it was left.
#include <QAbstractItemView>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QToolButton>

#include "chat_view.h"
#include "conversation_store.h"
#include "local_engine.h"
#include "main_window.h"
#include "message_widget.h"
#include "settings_dialog.h"
#include "studio.h"
#include "studio_settings.h"
#include "support/test_support.h"

using namespace deltafin::gui;
namespace T = deltafin::test;

namespace {

void waitReady(LocalEngine* engine) {
  QSignalSpy failed(engine, &ChatBackend::unavailable);
  QTRY_VERIFY_WITH_TIMEOUT(engine->isReady() || failed.count() > 0, 180000);
  if (!failed.isEmpty()) QFAIL(qPrintable(failed.first().first().toString()));
}

// A conversation with what exports must keep: several lines, Markdown, non-Latin text, reasoning,
// figures, an error, settings.
Conversation sample() {
  Conversation c;
  c.title = QStringLiteral("Tides and 潮汐");
  c.settings.systemPrompt = QStringLiteral("Answer like a sailor.\nKeep it short.");
  c.settings.temperature = 0.7;
  c.settings.topP = 0.9;
  c.settings.seed = 12345678901234ULL;
  c.settings.effort = QStringLiteral("high");
  StoredMessage q;
  q.role = QStringLiteral("user");
  q.content = QStringLiteral("Why are there two tides a day?\n\n## Not a heading of ours\n- and a list");
  StoredMessage a;
  a.role = QStringLiteral("assistant");
  a.reasoning = QStringLiteral("The moon pulls the near side;\nthe far side lags behind.");
  a.reasoningExpanded = true;
  a.content = QStringLiteral("Because of **two bulges**:\n\n```\nnear | far\n```\nÜbrigens: 月亮.");
  a.hasStats = true;
  a.stats.promptTokens = 21;
  a.stats.newTokens = 42;
  a.stats.decodeTokensPerSecond = 12.5;
  a.stats.firstTokenSeconds = 0.25;
  StoredMessage failed;
  failed.role = QStringLiteral("assistant");
  failed.error = QStringLiteral("the engine stopped");
  c.messages = {q, a, failed};
  return c;
}

void compareMessages(const Conversation& got, const Conversation& want, bool exact) {
  QCOMPARE(got.title, want.title);
  QCOMPARE(got.settings, want.settings);
  QCOMPARE(got.messages.size(), want.messages.size());
  for (int i = 0; i < want.messages.size(); ++i) {
    QCOMPARE(got.messages[i].role, want.messages[i].role);
    QCOMPARE(got.messages[i].content, want.messages[i].content);
    QCOMPARE(got.messages[i].reasoning, want.messages[i].reasoning);
    if (!exact) continue;
    QCOMPARE(got.messages[i].reasoningExpanded, want.messages[i].reasoningExpanded);
    QCOMPARE(got.messages[i].error, want.messages[i].error);
    QCOMPARE(got.messages[i].hasStats, want.messages[i].hasStats);
    QCOMPARE(got.messages[i].stats.newTokens, want.messages[i].stats.newTokens);
    QCOMPARE(got.messages[i].stats.decodeTokensPerSecond, want.messages[i].stats.decodeTokensPerSecond);
  }
}

QStringList listedTitles(ChatView* chat) {
  QStringList out;
  for (int i = 0; i < chat->conversationList()->count(); ++i) out << chat->conversationList()->item(i)->text();
  return out;
}

}  // namespace

class TestGuiChat : public QObject {
  Q_OBJECT

  QString demoModel() const { return QString::fromStdString(T::build_dir() + "/demo-model"); }

 private slots:
  void enterSendsAndShiftEnterDoesNot() {
    const QString data = QString::fromStdString(T::temp_dir("gui-enter"));
    Studio studio({demoModel(), data});
    studio.settings().maxNewTokens = 4;
    MainWindow window(&studio);
    window.chatView()->setMaxNewTokens(4);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    ChatView* chat = window.chatView();
    QVERIFY(chat->enterSends());  // the default
    chat->input()->setFocus();

    QTest::keyClicks(chat->input(), "first line");
    QTest::keyClick(chat->input(), Qt::Key_Return, Qt::ShiftModifier);
    QVERIFY(!chat->isGenerating());
    QVERIFY(chat->messageWidgets().isEmpty());
    QTest::keyClicks(chat->input(), "second line");
    QCOMPARE(chat->input()->toPlainText(), QString("first line\nsecond line"));
    QTest::keyClick(chat->input(), Qt::Key_Return);
    QVERIFY(chat->isGenerating());
    QVERIFY(chat->input()->toPlainText().isEmpty());
    QCOMPARE(chat->messageWidgets().first()->message().content, QString("first line\nsecond line"));
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000);
    // The keypad's Enter sends too.
    QTest::keyClicks(chat->input(), "again");
    QTest::keyClick(chat->input(), Qt::Key_Enter, Qt::KeypadModifier);
    QVERIFY(chat->isGenerating());
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000);
    QCOMPARE(chat->messageWidgets().size(), 4);

    // The old behaviour, chosen in Settings: Enter is a new line, Ctrl+Enter sends.
    SettingsDialog* dialog = window.openSettings();
    auto* enterSends = dialog->findChild<QCheckBox*>("enterSends");
    QVERIFY(enterSends && enterSends->isChecked());
    enterSends->setChecked(false);
    QTest::mouseClick(dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok), Qt::LeftButton);
    QVERIFY(!chat->enterSends());
    QVERIFY(!StudioSettings::load(data + "/settings.ini").enterSends);
    chat->input()->setFocus();
    QTest::keyClicks(chat->input(), "one");
    QTest::keyClick(chat->input(), Qt::Key_Return);
    QTest::keyClicks(chat->input(), "two");
    QVERIFY(!chat->isGenerating());
    QCOMPARE(chat->input()->toPlainText(), QString("one\ntwo"));
    QTest::keyClick(chat->input(), Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(chat->isGenerating());
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000);
    QCOMPARE(chat->messageWidgets().size(), 6);
    QCOMPARE(chat->messageWidgets()[4]->message().content, QString("one\ntwo"));
  }

  void exportWritesAFileThatReimports() {
    const QString data = QString::fromStdString(T::temp_dir("gui-export"));
    ConversationStore store(data + "/conversations.json");
    Conversation original = sample();
    original.id = store.create();
    store.update(original);
    ChatView chat(&store);
    chat.show();
    chat.openConversation(original.id);

    for (const QString& format : {QString("json"), QString("markdown")}) {
      const QString file = data + "/export." + (format == "json" ? "json" : "md");
      QString error;
      QVERIFY2(chat.exportConversation(original.id, file, format, &error), qPrintable(error));
      QVERIFY(QFileInfo(file).size() > 0);
      const qsizetype before = store.conversations().size();
      QVERIFY2(chat.importConversations(file, &error), qPrintable(error));
      QCOMPARE(store.conversations().size(), before + 1);
      // The import is open, under a new id, and shows every message.
      const QString id = chat.currentConversationId();
      QVERIFY(id != original.id);
      const Conversation* imported = store.find(id);
      QVERIFY(imported);
      // JSON keeps everything; Markdown keeps what a reader sees (no figures, no error lines).
      if (format == "json") {
        compareMessages(*imported, original, true);
      } else {
        Conversation readable = original;
        readable.messages.removeLast();  // the failed reply has no text
        Conversation got = *imported;
        got.messages.removeIf([](const StoredMessage& m) { return m.content.isEmpty() && m.reasoning.isEmpty(); });
        compareMessages(got, readable, false);
      }
      QCOMPARE(chat.messageWidgets().size(), imported->messages.size());
      QCOMPARE(chat.optionsPanel()->findChild<QPlainTextEdit*>("systemPrompt")->toPlainText(),
               original.settings.systemPrompt);
    }
    // The Markdown reads as Markdown.
    QFile md(data + "/export.md");
    QVERIFY(md.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(md.readAll());
    QVERIFY(text.startsWith("# Tides and 潮汐\n"));
    QVERIFY(text.contains("## You\n\nWhy are there two tides a day?"));
    QVERIFY(text.contains("<details><summary>Reasoning</summary>"));

    // Anything else is refused with a reason, and nothing is added.
    const qsizetype before = store.conversations().size();
    for (const QByteArray& junk :
         {QByteArray("{\"hello\": 1}"), QByteArray("# Just notes\n\nno markers"), QByteArray("\x00\x01", 2)}) {
      const QString file = data + "/junk.txt";
      QFile f(file);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(junk);
      f.close();
      QString error;
      QVERIFY(!chat.importConversations(file, &error));
      QVERIFY2(error.contains("junk.txt"), qPrintable(error));
    }
    QString error;
    QVERIFY(!chat.importConversations(data + "/missing.json", &error));
    QVERIFY(!error.isEmpty());
    QCOMPARE(store.conversations().size(), before);

    // Everything survives a restart.
    ConversationStore reread(data + "/conversations.json");
    QCOMPARE(reread.conversations().size(), before);
  }

  void renameAndSearch() {
    const QString data = QString::fromStdString(T::temp_dir("gui-rename"));
    ConversationStore store(data + "/conversations.json");
    for (const auto& [title, text] :
         {std::pair{"Weekend plans", "Hiking in the Alps"}, std::pair{"Recipes", "A soup with leeks"},
          std::pair{"Boats", "Sailing to the islands"}}) {
      Conversation c;
      c.id = store.create();
      c.title = title;
      StoredMessage m;
      m.role = "user";
      m.content = text;
      c.messages = {m};
      store.update(c);
    }
    ChatView chat(&store);
    chat.show();
    chat.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&chat));  // shortcuts need an active window
    QCOMPARE(chat.conversationList()->count(), 3);
    QCOMPARE(listedTitles(&chat).first(), QString("Boats"));  // newest first
    chat.openConversation(store.conversations().first().id);

    // Rename by keyboard: F2 opens the title for editing, Enter keeps it.
    chat.conversationList()->setFocus();
    QTest::keyClick(chat.conversationList(), Qt::Key_F2);
    QTRY_VERIFY(chat.conversationList()->findChild<QLineEdit*>() &&
                chat.conversationList()->findChild<QLineEdit*>()->isVisible());
    QLineEdit* editor = chat.conversationList()->findChild<QLineEdit*>();
    editor->selectAll();
    QTest::keyClicks(editor, "Sea voyages");
    QTest::keyClick(editor, Qt::Key_Return);
    QTRY_COMPARE(store.conversations().first().title, QString("Sea voyages"));
    QCOMPARE(listedTitles(&chat).first(), QString("Sea voyages"));  // its place stays
    QCOMPARE(ConversationStore(data + "/conversations.json").conversations().first().title, QString("Sea voyages"));

    // Search: titles and messages, any case; Ctrl+F gets there.
    QTest::keyClick(&chat, Qt::Key_F, Qt::ControlModifier);
    QVERIFY(chat.searchBox()->hasFocus());
    QTest::keyClicks(chat.searchBox(), "LEEK");
    QCOMPARE(listedTitles(&chat), QStringList{"Recipes"});
    chat.searchBox()->setText("voyage");
    QCOMPARE(listedTitles(&chat), QStringList{"Sea voyages"});
    chat.searchBox()->setText("nothing like this");
    QCOMPARE(chat.conversationList()->count(), 0);
    chat.searchBox()->clear();
    QCOMPARE(chat.conversationList()->count(), 3);
  }

  void chatSettingsReachTheEngine() {
    const QString data = QString::fromStdString(T::temp_dir("gui-chat-settings"));
    Studio studio({demoModel(), data});
    MainWindow window(&studio);
    window.show();
    studio.startEngine();
    waitReady(studio.engine());
    ChatView* chat = window.chatView();
    chat->setMaxNewTokens(6);
    auto sendAndWait = [&](const QString& text) -> StoredMessage {
      chat->input()->setPlainText(text);
      chat->send();
      [&] { QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000); }();
      return chat->messageWidgets().last()->message();
    };
    const StoredMessage plain = sendAndWait("Name a colour.");

    // A second chat with its own settings, set through the side panel.
    chat->newConversation();
    QTest::mouseClick(chat->optionsButton(), Qt::LeftButton);
    QVERIFY(chat->optionsPanel()->isVisible());
    QWidget* panel = chat->optionsPanel();
    panel->findChild<QPlainTextEdit*>("systemPrompt")->setPlainText("You are a painter. Answer with one word.");
    panel->findChild<QDoubleSpinBox*>("temperature")->setValue(0.9);
    panel->findChild<QDoubleSpinBox*>("topP")->setValue(0.8);
    panel->findChild<QSpinBox*>("seed")->setValue(7);
    auto* effort = panel->findChild<QComboBox*>("effort");
    effort->setCurrentIndex(effort->findData("high"));
    chat->thinkingBox()->setChecked(true);
    const GenerationRequest req = chat->pendingRequest();
    QCOMPARE(req.turns.size(), 1);
    QCOMPARE(req.turns.first().role, QString("system"));
    QCOMPARE(req.turns.first().content, QString("You are a painter. Answer with one word."));
    QCOMPARE(req.temperature, 0.9);
    QCOMPARE(req.topP, 0.8);
    QCOMPARE(req.seed, quint64(7));
    QCOMPARE(req.effort, QString("high"));
    const StoredMessage first = sendAndWait("Name a colour.");
    // The system prompt and the effort message were in the prompt the engine read.
    QVERIFY2(first.stats.promptTokens > plain.stats.promptTokens + 8,
             qPrintable(QString("%1 vs %2 prompt tokens").arg(first.stats.promptTokens).arg(plain.stats.promptTokens)));
    // Seeded sampling: the same seed gives the same reply.
    chat->regenerate();
    QTRY_VERIFY_WITH_TIMEOUT(!chat->isGenerating(), 300000);
    const StoredMessage again = chat->messageWidgets().last()->message();
    QCOMPARE(again.reasoning + again.content, first.reasoning + first.content);

    // The settings belong to that chat: the first chat still has none, and both survive a restart.
    const QString withSettings = chat->currentConversationId();
    ConversationStore reread(data + "/conversations.json");
    const Conversation* saved = reread.find(withSettings);
    QVERIFY(saved);
    QCOMPARE(saved->settings.seed, quint64(7));
    QCOMPARE(saved->settings.effort, QString("high"));
    QCOMPARE(saved->settings.temperature, 0.9);
    QCOMPARE(saved->settings.topP, 0.8);
    QCOMPARE(reread.conversations().last().settings, ChatSettings{});
    chat->openConversation(reread.conversations().last().id);
    QVERIFY(panel->findChild<QPlainTextEdit*>("systemPrompt")->toPlainText().isEmpty());
    QCOMPARE(panel->findChild<QSpinBox*>("seed")->value(), 0);
  }

  void reasoningStateIsRemembered() {
    const QString data = QString::fromStdString(T::temp_dir("gui-reasoning"));
    QString id;
    {
      ConversationStore store(data + "/conversations.json");
      Conversation c = sample();
      c.messages[1].reasoningExpanded = false;
      c.id = id = store.create();
      store.update(c);
      ChatView chat(&store);
      chat.show();
      chat.openConversation(id);
      MessageWidget* answer = chat.messageWidgets()[1];
      QVERIFY(answer->reasoningToggle()->isVisibleTo(answer));
      QVERIFY(!answer->reasoningExpanded());
      QTest::mouseClick(answer->reasoningToggle(), Qt::LeftButton);
      QVERIFY(answer->reasoningExpanded());
    }
    ConversationStore store(data + "/conversations.json");
    QVERIFY(store.find(id)->messages[1].reasoningExpanded);
    ChatView chat(&store);
    chat.show();
    chat.openConversation(id);
    QVERIFY(chat.messageWidgets()[1]->reasoningExpanded());
    QVERIFY(chat.messageWidgets()[1]->findChild<QLabel*>("reasoningText")->isVisibleTo(chat.messageWidgets()[1]));
  }
};

QTEST_MAIN(TestGuiChat)
#include "test_gui_chat.moc"
