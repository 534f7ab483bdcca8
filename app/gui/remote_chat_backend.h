#pragma once
// Chat against any OpenAI-compatible endpoint (vLLM, SGLang, `deltafin serve`): streamed
// /chat/completions over server-sent events, with reasoning_content shown as reasoning, the
// model's tool calls shown once complete, and the history's tool calls and results sent back.
#include <QElapsedTimer>
#include <QMap>
#include <QNetworkAccessManager>
#include <QPointer>
#include <QUrl>

#include "chat_backend.h"

class QNetworkReply;

namespace deltafin::gui {

class RemoteChatBackend : public ChatBackend {
  Q_OBJECT
 public:
  explicit RemoteChatBackend(QObject* parent = nullptr);

  // `baseUrl` ends in /v1; an empty `model` takes the first one /models lists.
  void setEndpoint(const QUrl& baseUrl, const QString& model, const QString& apiKey);
  void start(const GenerationRequest& request) override;
  void stop() override;

  // A request that receives nothing for this long fails (the probe, and a stream between events).
  void setStallTimeout(int ms) { stallTimeoutMs_ = ms; }
  // The most bytes of one server-sent event held while waiting for its end; more fails the request.
  static constexpr qsizetype kMaxEventBytes = 4 << 20;
  // Keys go only over https, or over http to this machine.
  static bool keySafeToSend(const QUrl& url);
  bool isReady() const override { return ready_; }
  BackendInfo info() const override { return info_; }

 private:
  QNetworkRequest makeRequest(const QString& path) const;
  void onData();
  void parseEvents();
  void onFinished();
  void handleEvent(const QByteArray& data);

  QNetworkAccessManager net_;
  QUrl base_;
  QString model_, apiKey_;
  BackendInfo info_;
  bool ready_ = false;
  QPointer<QNetworkReply> probe_;

  QPointer<QNetworkReply> reply_;
  quint64 requestId_ = 0;
  QByteArray buffer_;
  // Streamed tool calls by their index: the id and name come first, the arguments in pieces.
  QMap<int, ToolCallInfo> calls_;
  QElapsedTimer clock_;
  qint64 firstTokenMs_ = -1;
  int tokens_ = 0;
  int usageTokens_ = -1, promptTokens_ = 0;
  bool stopped_ = false;
  QString errorText_;
  int stallTimeoutMs_ = 120000;
};

}  // namespace deltafin::gui
