// Tool calls and tool results in the Studio's chat: a remote server's streamed tool_calls shown
// under the answer and kept; an agent's history (an OpenAI-style transcript with tool calls and
// role "tool" results) imported, shown, sent back to the server as the OpenAI API has it, and
// exported and re-imported (JSON and Markdown) whole; the local engine's side: the turns rendered
// as K3's tool-result messages, and the model's call events read back as calls.
#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTcpServer>
#include <QTcpSocket>

#include "chat_turns.h"
#include "chat_view.h"
#include "conversation_store.h"
#include "message_widget.h"
#include "remote_chat_backend.h"
#include "support/test_support.h"
#include "tokenizer/chat_stream_parser.h"
#include "tokenizer/tokenizer.h"

using namespace deltafin::gui;
namespace T = deltafin::test;

namespace {

// An OpenAI-compatible endpoint whose chat answer is a reply with one tool call, streamed as
// OpenAI streams calls: the id and name first, the arguments in two pieces. It keeps the bodies
// it was sent.
class ToolEndpoint : public QObject {
 public:
  ToolEndpoint() {
    server_.listen(QHostAddress::LocalHost);
    connect(&server_, &QTcpServer::newConnection, this, [this] {
      while (QTcpSocket* s = server_.nextPendingConnection()) {
        auto* got = new QByteArray;
        connect(s, &QTcpSocket::disconnected, s, [s, got] {
          delete got;
          s->deleteLater();
        });
        connect(s, &QTcpSocket::readyRead, this, [this, s, got] {
          *got += s->readAll();
          const qsizetype end = got->indexOf("\r\n\r\n");
          if (end < 0) return;
          const QByteArray head = got->left(end);
          qsizetype length = 0;
          for (const QByteArray& line : head.split('\n'))
            if (line.toLower().startsWith("content-length:")) length = line.mid(15).trimmed().toLongLong();
          if (got->size() < end + 4 + length) return;
          const QByteArray body = got->mid(end + 4, length);
          got->remove(0, end + 4 + length);
          if (head.startsWith("GET") && head.contains("/models")) {
            const QByteArray list = R"({"object":"list","data":[{"id":"k3"}]})";
            s->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                     QByteArray::number(list.size()) + "\r\n\r\n" + list);
            return;
          }
          bodies.push_back(QJsonDocument::fromJson(body).object());
          QByteArray sse;
          auto event = [&](const QJsonObject& delta, const QJsonValue& finish = QJsonValue::Null) {
            const QJsonObject chunk{
                {"object", "chat.completion.chunk"},
                {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
            sse += "data: " + QJsonDocument(chunk).toJson(QJsonDocument::Compact) + "\n\n";
          };
          event(QJsonObject{{"role", "assistant"}, {"content", ""}});
          event(QJsonObject{{"reasoning_content", "The user wants weather."}});
          event(QJsonObject{{"content", "Let me check."}});
          event(QJsonObject{
              {"tool_calls", QJsonArray{QJsonObject{{"index", 0},
                                                    {"id", "call_7f3a"},
                                                    {"type", "function"},
                                                    {"function", QJsonObject{{"name", "get_weather"},
                                                                             {"arguments", "{\"city\": \"Pa"}}}}}}});
          event(QJsonObject{
              {"tool_calls", QJsonArray{QJsonObject{
                                 {"index", 0}, {"function", QJsonObject{{"arguments", "ris\", \"days\": 2}"}}}}}}});
          event(QJsonObject{}, QStringLiteral("tool_calls"));
          sse += "data: [DONE]\n\n";
          s->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + sse);
          s->disconnectFromHost();
        });
      }
    });
  }
  QUrl url() const { return QUrl(QStringLiteral("http://127.0.0.1:%1/v1").arg(server_.serverPort())); }
  QList<QJsonObject> bodies;

 private:
  QTcpServer server_;
};

// What an agent sent: a question, the model's two calls, both results (in reverse order), and the
// model's answer.
// (An ordinary literal: moc skips a file whose raw string literals hold quotes.)
const char* kAgentTranscript =
    "{\n"
    "  \"model\": \"kimi-k3\",\n"
    "  \"messages\": [\n"
    "    {\"role\": \"system\", \"content\": \"You are a travel agent.\"},\n"
    "    {\"role\": \"user\", \"content\": \"Weather and time in Paris?\"},\n"
    "    {\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"Two tools.\",\n"
    "     \"tool_calls\": [\n"
    "       {\"id\": \"call_a\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": "
    "\"{\\\"city\\\":\\\"Paris\\\"}\"}},\n"
    "       {\"id\": \"call_b\", \"type\": \"function\", \"function\": {\"name\": \"get_time\", \"arguments\": "
    "\"{\\\"tz\\\":\\\"CET\\\"}\"}}]},\n"
    "    {\"role\": \"tool\", \"tool_call_id\": \"call_b\", \"name\": \"get_time\", \"content\": \"14:05\"},\n"
    "    {\"role\": \"tool\", \"tool_call_id\": \"call_a\", \"name\": \"get_weather\", \"content\": \"{\\\"temp_c\\\": "
    "21, \\\"sky\\\": \\\"sunny\\\"}\"},\n"
    "    {\"role\": \"assistant\", \"content\": \"Sunny, 21 °C; it is 14:05.\"}\n"
    "  ]\n"
    "}\n";

void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

}  // namespace

class TestGuiToolCalls : public QObject {
  Q_OBJECT

 private slots:
  void remoteToolCallsAreShownAndKept() {
    const QString data = QString::fromStdString(T::temp_dir("gui-tool-remote"));
    ToolEndpoint endpoint;
    RemoteChatBackend remote;
    QSignalSpy ready(&remote, &ChatBackend::ready);
    remote.setEndpoint(endpoint.url(), QString(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(remote.isReady(), 10000);
    ConversationStore store(data + "/conversations.json");
    ChatView chat(&store);
    chat.setBackend(&remote);
    chat.show();

    chat.input()->setPlainText("Weather in Paris?");
    chat.send();
    QTRY_VERIFY_WITH_TIMEOUT(!chat.isGenerating(), 20000);
    MessageWidget* reply = chat.messageWidgets().last();
    QCOMPARE(reply->message().content, QString("Let me check."));
    QCOMPARE(reply->message().reasoning, QString("The user wants weather."));
    // The call, whole (its arguments came in two pieces), shown under the answer.
    const QList<ToolCallInfo> want = {ToolCallInfo{"call_7f3a", "get_weather", "{\"city\": \"Paris\", \"days\": 2}"}};
    QCOMPARE(reply->message().toolCalls, want);
    QCOMPARE(reply->toolCallLabels().size(), 1);
    const QString shown = reply->toolCallLabels().first()->text();
    QVERIFY2(shown.contains("get_weather") && shown.contains("\"city\": \"Paris\"") && shown.contains("\"days\": 2"),
             qPrintable(shown));
    QVERIFY(reply->toolCallLabels().first()->isVisibleTo(reply));
    // Kept with the conversation (a restart shows it again).
    ConversationStore reread(data + "/conversations.json");
    QCOMPARE(reread.conversations().first().messages.last().toolCalls, want);
  }

  void agentHistoryIsShownSentAndExported() {
    const QString data = QString::fromStdString(T::temp_dir("gui-tool-history"));
    ToolEndpoint endpoint;
    RemoteChatBackend remote;
    remote.setEndpoint(endpoint.url(), QString(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(remote.isReady(), 10000);
    ConversationStore store(data + "/conversations.json");
    ChatView chat(&store);
    chat.setBackend(&remote);
    chat.show();

    const QString transcript = data + "/agent.json";
    writeFile(transcript, kAgentTranscript);
    QString error;
    QVERIFY2(chat.importConversations(transcript, &error), qPrintable(error));
    const Conversation imported = *store.find(chat.currentConversationId());
    QCOMPARE(imported.settings.systemPrompt, QString("You are a travel agent."));
    QCOMPARE(imported.title, QString("Weather and time in Paris?"));
    QCOMPARE(imported.messages.size(), 5);

    // Shown: the two calls under the first answer, each result as a tool message naming its tool.
    const QList<MessageWidget*> widgets = chat.messageWidgets();
    QCOMPARE(widgets.size(), 5);
    QCOMPARE(widgets[1]->toolCallLabels().size(), 2);
    QVERIFY(widgets[1]->toolCallLabels()[0]->text().contains("get_weather"));
    QVERIFY(widgets[1]->toolCallLabels()[1]->text().contains("get_time"));
    QCOMPARE(widgets[2]->objectName(), QString("toolMessage"));
    QCOMPARE(widgets[2]->message().toolName, QString("get_time"));
    QCOMPARE(widgets[2]->message().toolCallId, QString("call_b"));
    QCOMPARE(widgets[3]->answerText(), QString("{\"temp_c\": 21, \"sky\": \"sunny\"}"));
    QVERIFY(widgets[3]->findChild<QLabel*>("messageRole")->text().contains("get_weather"));

    // Sent back as the OpenAI API has it: the calls on the assistant message, the results as
    // role "tool" with the call they answer.
    chat.input()->setPlainText("And tomorrow?");
    chat.send();
    QTRY_VERIFY_WITH_TIMEOUT(!chat.isGenerating(), 20000);
    QCOMPARE(endpoint.bodies.size(), 1);
    const QJsonArray sent = endpoint.bodies.first().value("messages").toArray();
    QCOMPARE(sent.size(), 7);  // the system prompt, the five messages, the new question
    QCOMPARE(sent[0].toObject().value("content").toString(), QString("You are a travel agent."));
    const QJsonObject calls = sent[2].toObject();
    QVERIFY(calls.value("content").isNull());
    QCOMPARE(calls.value("tool_calls").toArray().size(), 2);
    QCOMPARE(calls.value("tool_calls")[1].toObject().value("id").toString(), QString("call_b"));
    QCOMPARE(calls.value("tool_calls")[1].toObject().value("function").toObject().value("name").toString(),
             QString("get_time"));
    QCOMPARE(calls.value("tool_calls")[0].toObject().value("function").toObject().value("arguments").toString(),
             QString("{\"city\":\"Paris\"}"));
    QCOMPARE(sent[3].toObject().value("role").toString(), QString("tool"));
    QCOMPARE(sent[3].toObject().value("tool_call_id").toString(), QString("call_b"));
    QCOMPARE(sent[3].toObject().value("content").toString(), QString("14:05"));
    QCOMPARE(sent[4].toObject().value("tool_call_id").toString(), QString("call_a"));

    // Exported and imported back, whole, in both formats.
    const Conversation withReply = *store.find(chat.currentConversationId());
    for (const QString& format : {QString("json"), QString("markdown")}) {
      const QString file = data + "/export." + format;
      QVERIFY2(chat.exportConversation(withReply.id, file, format, &error), qPrintable(error));
      QVERIFY2(chat.importConversations(file, &error), qPrintable(error));
      const Conversation back = *store.find(chat.currentConversationId());
      QCOMPARE(back.messages.size(), withReply.messages.size());
      for (int i = 0; i < back.messages.size(); ++i) {
        const StoredMessage &a = back.messages[i], &b = withReply.messages[i];
        QCOMPARE(a.role, b.role);
        QCOMPARE(a.content, b.content);
        QCOMPARE(a.reasoning, b.reasoning);
        QCOMPARE(a.toolCalls, b.toolCalls);
        QCOMPARE(a.toolCallId, b.toolCallId);
        QCOMPARE(a.toolName, b.toolName);
      }
    }
    // The Markdown names the calls and the results for a reader.
    QFile md(data + "/export.markdown");
    QVERIFY(md.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(md.readAll());
    QVERIFY2(text.contains("`get_weather` `{\"city\":\"Paris\"}`"), qPrintable(text));
    QVERIFY2(text.contains("## Tool result: get_time\n"), qPrintable(text));
  }

  // The local engine: turns with calls and results render as K3's tool messages (issue 35's
  // format, index counting from 1 after the assistant message, in call order), and the call events
  // of the model's reply come back as calls with fresh ids.
  void localEngineTurnsAndCalls() {
    const auto tok = deltafin::load_tokenizer(T::fixtures_dir() + "/k3-tiny");
    QList<ChatTurn> turns;
    turns.push_back(ChatTurn{"user", "Weather and time in Paris?", {}, {}, {}, {}});
    turns.push_back(
        ChatTurn{"assistant",
                 "",
                 "",
                 {{"call_a", "get_weather", "{\"city\":\"Paris\"}"}, {"call_b", "get_time", "{\"tz\":\"CET\"}"}},
                 {},
                 {}});
    turns.push_back(ChatTurn{"tool", "14:05", {}, {}, "call_b", "get_time"});
    turns.push_back(ChatTurn{"tool", "21C", {}, {}, "call_a", "get_weather"});
    deltafin::ChatOptions opt;
    opt.thinking = false;
    const std::vector<int32_t> ids = deltafin::render_chat(*tok, engineMessages(turns), opt);
    const std::string text = tok->decode(ids);
    const std::string calls =
        "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|>"
        "<|open|>call tool=\"get_time\" index=\"2\"<|sep|>"
        "<|open|>argument key=\"tz\" "
        "type=\"string\"<|sep|>CET<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
    const std::string results =
        "<|open|>message role=\"tool\" tool=\"get_weather\" index=\"1\"<|sep|>21C<|close|>message<|sep|><|end_of_msg|>"
        "<|open|>message role=\"tool\" tool=\"get_time\" index=\"2\"<|sep|>14:05<|close|>message<|sep|><|end_of_msg|>";
    QVERIFY2(text.find(calls) != std::string::npos, text.c_str());
    QVERIFY2(text.find(results) != std::string::npos, text.c_str());

    // A reply with a call (thinking off: the prompt opened the response), parsed as the local
    // engine parses its tokens.
    const std::string reply =
        "Checking.<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>"
        "<|open|>argument key=\"days\" type=\"number\"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|>"
        "<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>";
    deltafin::ChatStreamParser parser(*tok, false);
    QList<ToolCallInfo> got;
    for (int32_t id : tok->encode(reply, true))
      for (const deltafin::ChatEvent& ev : parser.push(id))
        if (ev.kind == deltafin::ChatEvent::Kind::ToolCall) got.push_back(toolCallFromEvent(ev));
    QCOMPARE(got.size(), 1);
    QCOMPARE(got[0].name, QString("get_weather"));
    QCOMPARE(QJsonDocument::fromJson(got[0].arguments.toUtf8()).object(),
             (QJsonObject{{"city", "Paris"}, {"days", 2}}));
    QVERIFY(QRegularExpression("^call_[0-9a-f]{24}$").match(got[0].id).hasMatch());
    QVERIFY(toolCallFromEvent(deltafin::ChatEvent(deltafin::ChatEvent::Kind::ToolCall, "f", "{}")).id != got[0].id);
  }
};

QTEST_MAIN(TestGuiToolCalls)
#include "test_gui_tool_calls.moc"
