// The remote engine's API key and connection: kept out of the settings file, never sent over
// plain http to another machine, and requests that stall or flood are ended.
#include <QtTest/QtTest>

#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>

#include <sys/stat.h>

#include "api_key_store.h"
#include "remote_chat_backend.h"
#include "studio_settings.h"
#include "support/test_support.h"

using namespace deltafin::gui;

namespace {

// An OpenAI-compatible endpoint that lists a model and then misbehaves on chat/completions.
class BadEndpoint : public QObject {
 public:
  enum Mode { Flood, Silent };
  explicit BadEndpoint(Mode m) : mode_(m) {
    server_.listen(QHostAddress::LocalHost);
    connect(&server_, &QTcpServer::newConnection, this, [this] {
      while (QTcpSocket* s = server_.nextPendingConnection()) {
        connect(s, &QTcpSocket::readyRead, this, [this, s] {
          request_ += s->readAll();
          if (!request_.contains("\r\n\r\n")) return;
          const bool models = request_.startsWith("GET") && request_.contains("/models");
          request_.clear();
          if (models) {
            const QByteArray body = R"({"object":"list","data":[{"id":"k3"}]})";
            s->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                     QByteArray::number(body.size()) + "\r\n\r\n" + body);
            return;
          }
          s->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
          if (mode_ == Flood) {
            s->write("data: ");
            const QByteArray chunk(64 * 1024, 'x');
            for (int i = 0; i < 160; ++i) s->write(chunk);  // 10 MiB, never a blank line
          }
        });
      }
    });
  }
  QUrl url() const { return QUrl(QStringLiteral("http://127.0.0.1:%1/v1").arg(server_.serverPort())); }

 private:
  Mode mode_;
  QTcpServer server_;
  QByteArray request_;
};

GenerationRequest hello() {
  GenerationRequest r;
  r.id = 1;
  ChatTurn t;
  t.role = QStringLiteral("user");
  t.content = QStringLiteral("hello");
  r.turns.push_back(t);
  r.maxNewTokens = 8;
  return r;
}

}  // namespace

class TestGuiRemoteKey : public QObject {
  Q_OBJECT

 private slots:
  void theKeyIsNotInTheSettingsFile() {
    const QString dir = QString::fromStdString(deltafin::test::temp_dir("keys"));
    const QString ini = dir + "/studio.ini";
    StudioSettings s;
    s.remoteEnabled = true;
    s.remoteApiKey = QStringLiteral("sk-settings-2b71");
    s.save(ini);
    QFile f(ini);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY2(!f.readAll().contains("sk-settings-2b71"), "the API key is in the plain-text settings");
    const StudioSettings back = StudioSettings::load(ini);
    QCOMPARE(back.remoteApiKey, QStringLiteral("sk-settings-2b71"));
    QVERIFY(!back.remoteApiKeyWhere.isEmpty());
    // Without a keychain (as here, offscreen without a session bus) the file is the owner's alone.
    if (back.remoteApiKeyWhere.startsWith('/')) {
      struct stat st {};
      QCOMPARE(::stat(QFile::encodeName(back.remoteApiKeyWhere).constData(), &st), 0);
      QCOMPARE(int(st.st_mode & 0777), 0600);
    }
    // Settings of an older version with the key in plain text: moved out on load.
    {
      QSettings old(ini, QSettings::IniFormat);
      old.setValue("remote/apiKey", "sk-old-91c0");
    }
    QCOMPARE(StudioSettings::load(ini).remoteApiKey, QStringLiteral("sk-old-91c0"));
    QFile again(ini);
    QVERIFY(again.open(QIODevice::ReadOnly));
    QVERIFY(!again.readAll().contains("sk-old-91c0"));
    ApiKeyStore(ini).write(QString());  // leaves nothing behind in a real keychain
  }

  void theKeyIsNeverSentOverPlainHttpToAnotherMachine() {
    RemoteChatBackend b;
    QSignalSpy unavailable(&b, &ChatBackend::unavailable);
    b.setEndpoint(QUrl(QStringLiteral("http://192.0.2.10:8080/v1")), QString(), QStringLiteral("sk-x"));
    QCOMPARE(unavailable.count(), 1);  // at once: no request was sent
    QVERIFY(unavailable.first().at(0).toString().contains("plain http"));
    QVERIFY(RemoteChatBackend::keySafeToSend(QUrl(QStringLiteral("https://api.example.com/v1"))));
    QVERIFY(RemoteChatBackend::keySafeToSend(QUrl(QStringLiteral("http://127.0.0.1:8080/v1"))));
    QVERIFY(!RemoteChatBackend::keySafeToSend(QUrl(QStringLiteral("http://10.0.0.5:8080/v1"))));
  }

  void aFloodWithoutEventEndsIsCutOff() {
    BadEndpoint server(BadEndpoint::Flood);
    RemoteChatBackend b;
    QSignalSpy failed(&b, &ChatBackend::failed);
    b.setEndpoint(server.url(), QString(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(b.isReady(), 10000);
    b.start(hello());
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 20000);
    QVERIFY2(failed.first().at(1).toString().contains("MiB"), qPrintable(failed.first().at(1).toString()));
  }

  void aStalledRequestTimesOut() {
    BadEndpoint server(BadEndpoint::Silent);
    RemoteChatBackend b;
    b.setStallTimeout(1000);
    QSignalSpy failed(&b, &ChatBackend::failed);
    b.setEndpoint(server.url(), QString(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(b.isReady(), 10000);
    b.start(hello());
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 20000);
    QVERIFY2(failed.first().at(1).toString().contains("no data"), qPrintable(failed.first().at(1).toString()));
  }
};

QTEST_MAIN(TestGuiRemoteKey)
#include "test_gui_remote_key.moc"
