#include "remote_chat_backend.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>

namespace deltafin::gui {

RemoteChatBackend::RemoteChatBackend(QObject* parent) : ChatBackend(parent) {}

QNetworkRequest RemoteChatBackend::makeRequest(const QString& path) const {
  QUrl url = base_;
  url.setPath(url.path().endsWith('/') ? url.path() + path : url.path() + '/' + path);
  QNetworkRequest req(url);
  req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
  if (!apiKey_.isEmpty()) req.setRawHeader("Authorization", "Bearer " + apiKey_.toUtf8());
  req.setTransferTimeout(stallTimeoutMs_);  // Qt's transfer timeout counts from the last byte: a stall limit
  return req;
}

bool RemoteChatBackend::keySafeToSend(const QUrl& url) {
  if (url.scheme() == QLatin1String("https")) return true;
  const QString host = url.host();
  return url.scheme() == QLatin1String("http") &&
         (host == QLatin1String("localhost") || host == QLatin1String("::1") || host.startsWith(QLatin1String("127.")));
}

void RemoteChatBackend::setEndpoint(const QUrl& baseUrl, const QString& model, const QString& apiKey) {
  base_ = baseUrl;
  model_ = model;
  apiKey_ = apiKey;
  ready_ = false;
  info_ = BackendInfo{};
  info_.name = tr("Remote");
  info_.modelRoot = baseUrl.toString();
  if (probe_) probe_->abort();
  if (!base_.isValid() || base_.scheme().isEmpty()) {
    emit unavailable(tr("the endpoint address %1 is not a URL").arg(baseUrl.toString()),
                     tr("enter an address such as http://127.0.0.1:8080/v1 in Settings"));
    return;
  }
  if (!apiKey_.isEmpty() && !keySafeToSend(base_)) {
    emit unavailable(
        tr("refusing to send the API key over plain http to %1: anyone on the way could read it").arg(base_.host()),
        tr("use an https address, or an SSH tunnel to 127.0.0.1"));
    return;
  }
  probe_ = net_.get(makeRequest(QStringLiteral("models")));
  connect(probe_, &QNetworkReply::finished, this, [this, reply = probe_.data()] {
    reply->deleteLater();
    if (reply->error() != QNetworkReply::NoError) {
      emit unavailable(tr("cannot reach %1: %2").arg(base_.toString(), reply->errorString()),
                       tr("check that the server runs and the address ends in /v1"));
      return;
    }
    const QJsonArray models = QJsonDocument::fromJson(reply->readAll()).object().value("data").toArray();
    if (model_.isEmpty() && !models.isEmpty()) model_ = models.first().toObject().value("id").toString();
    if (model_.isEmpty()) {
      emit unavailable(tr("%1 lists no models").arg(base_.toString()), tr("enter the model name in Settings"));
      return;
    }
    info_.modelName = model_;
    ready_ = true;
    emit ready(info_);
  });
}

void RemoteChatBackend::start(const GenerationRequest& request) {
  requestId_ = request.id;
  buffer_.clear();
  tokens_ = 0;
  usageTokens_ = -1;
  promptTokens_ = 0;
  firstTokenMs_ = -1;
  stopped_ = false;
  errorText_.clear();
  calls_.clear();
  QJsonArray messages;
  for (const ChatTurn& t : request.turns) {
    QJsonObject m{{"role", t.role}, {"content", t.content}};
    if (!t.toolCalls.isEmpty()) {
      QJsonArray calls;
      for (const ToolCallInfo& c : t.toolCalls)
        calls.push_back(QJsonObject{{"id", c.id},
                                    {"type", "function"},
                                    {"function", QJsonObject{{"name", c.name}, {"arguments", c.arguments}}}});
      m.insert("tool_calls", calls);
      if (t.content.isEmpty()) m.insert("content", QJsonValue::Null);  // as OpenAI sends a message of calls only
    }
    if (t.role == QLatin1String("tool")) m.insert("tool_call_id", t.toolCallId);
    messages.push_back(m);
  }
  QJsonObject body{{"model", model_},
                   {"messages", messages},
                   {"stream", true},
                   {"max_tokens", request.maxNewTokens},
                   {"temperature", request.temperature},
                   {"top_p", request.topP},
                   {"seed", static_cast<qint64>(request.seed)},
                   {"stream_options", QJsonObject{{"include_usage", true}}}};
  if (!request.effort.isEmpty()) body.insert("reasoning_effort", request.effort);
  clock_.start();
  reply_ =
      net_.post(makeRequest(QStringLiteral("chat/completions")), QJsonDocument(body).toJson(QJsonDocument::Compact));
  connect(reply_, &QNetworkReply::readyRead, this, &RemoteChatBackend::onData);
  connect(reply_, &QNetworkReply::finished, this, &RemoteChatBackend::onFinished);
}

void RemoteChatBackend::stop() {
  stopped_ = true;
  if (reply_) reply_->abort();
}

void RemoteChatBackend::onData() {
  if (!reply_) return;
  buffer_ += reply_->readAll();
  parseEvents();
  if (buffer_.size() > kMaxEventBytes) {
    errorText_ = tr("the server sent more than %1 MiB without ending an event").arg(kMaxEventBytes >> 20);
    buffer_.clear();
    reply_->abort();
  }
}

void RemoteChatBackend::parseEvents() {
  // Server-sent events: blank-line separated, "data: " lines carry the JSON.
  for (;;) {
    int end = buffer_.indexOf("\n\n");
    int skip = 2;
    const int crlf = buffer_.indexOf("\r\n\r\n");
    if (crlf >= 0 && (end < 0 || crlf < end)) {
      end = crlf;
      skip = 4;
    }
    if (end < 0) break;
    const QByteArray event = buffer_.left(end);
    buffer_.remove(0, end + skip);
    QByteArray data;
    for (const QByteArray& line : event.split('\n')) {
      const QByteArray l = line.trimmed();
      if (l.startsWith("data:")) data += l.mid(5).trimmed();
    }
    if (!data.isEmpty()) {
      handleEvent(data);
    } else {
      // A plain JSON error body (the request was refused before streaming began).
      const QJsonValue err = QJsonDocument::fromJson(event.trimmed()).object().value("error");
      if (err.isObject()) errorText_ = err.toObject().value("message").toString();
      else if (err.isString()) errorText_ = err.toString();
    }
  }
}

void RemoteChatBackend::handleEvent(const QByteArray& data) {
  if (data == "[DONE]") return;
  const QJsonObject o = QJsonDocument::fromJson(data).object();
  if (o.contains("error")) {
    errorText_ = o.value("error").toObject().value("message").toString();
    return;
  }
  const QJsonObject usage = o.value("usage").toObject();
  if (!usage.isEmpty()) {
    usageTokens_ = usage.value("completion_tokens").toInt(-1);
    promptTokens_ = usage.value("prompt_tokens").toInt();
  }
  const QJsonArray choices = o.value("choices").toArray();
  if (choices.isEmpty()) return;
  const QJsonObject delta = choices.first().toObject().value("delta").toObject();
  for (const QJsonValue& v : delta.value("tool_calls").toArray()) {
    const QJsonObject tc = v.toObject();
    ToolCallInfo& call = calls_[tc.value("index").toInt(static_cast<int>(calls_.size()))];
    if (tc.contains("id")) call.id = tc.value("id").toString();
    const QJsonObject f = tc.value("function").toObject();
    if (f.contains("name")) call.name += f.value("name").toString();
    call.arguments += f.value("arguments").toString();
  }
  const QString reasoning = delta.value("reasoning_content").toString();
  const QString content = delta.value("content").toString();
  if (reasoning.isEmpty() && content.isEmpty()) return;
  if (firstTokenMs_ < 0) firstTokenMs_ = clock_.elapsed();
  ++tokens_;
  emit chunk(requestId_, reasoning, content);
}

void RemoteChatBackend::onFinished() {
  if (!reply_) return;
  QNetworkReply* reply = reply_;
  reply_ = nullptr;
  reply->deleteLater();
  // A last event may come without its blank line when the connection closes.
  if (reply->isOpen()) buffer_ += reply->readAll();
  if (!buffer_.isEmpty()) {
    buffer_ += "\n\n";
    parseEvents();
  }
  const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (!stopped_ && (reply->error() != QNetworkReply::NoError || !errorText_.isEmpty())) {
    QString what = errorText_;
    // Qt ends a request that passed its transfer timeout as cancelled; stop() is the only other canceller.
    if (what.isEmpty() &&
        (reply->error() == QNetworkReply::TimeoutError || reply->error() == QNetworkReply::OperationCanceledError))
      what = tr("no data for %1 s").arg(stallTimeoutMs_ / 1000);
    if (what.isEmpty()) what = reply->errorString();
    emit failed(requestId_, tr("the server answered %1: %2").arg(status).arg(what),
                tr("check the endpoint and model in Settings"));
    return;
  }
  // The calls once complete: their arguments may have come in many pieces.
  for (const ToolCallInfo& call : std::as_const(calls_))
    if (!call.name.isEmpty()) emit toolCall(requestId_, call);
  calls_.clear();
  GenerationStats s;
  const double total = clock_.elapsed() / 1000.0;
  s.newTokens = usageTokens_ >= 0 ? usageTokens_ : tokens_;
  s.promptTokens = promptTokens_;
  s.firstTokenSeconds = firstTokenMs_ >= 0 ? firstTokenMs_ / 1000.0 : total;
  const double decode = total - s.firstTokenSeconds;
  s.decodeTokensPerSecond = decode > 0 && s.newTokens > 1 ? (s.newTokens - 1) / decode : 0;
  s.totalSeconds = total;
  s.stoppedByUser = stopped_;
  emit finished(requestId_, s);
}

}  // namespace deltafin::gui
