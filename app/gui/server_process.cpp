#include "server_process.h"

#include <utility>

#include <QRegularExpression>

#include "app_paths.h"

namespace deltafin::gui {

ServerProcess::ServerProcess(QObject* parent) : QObject(parent) {
  process_.setProcessChannelMode(QProcess::MergedChannels);
  connect(&process_, &QProcess::readyRead, this, [this] {
    output_ += QString::fromUtf8(process_.readAll());
    if (output_.size() > 20000) output_ = output_.right(20000);
    if (url_.isEmpty()) {
      static const QRegularExpression re(QStringLiteral("listening on (http://[^ \\s]+)"));
      const QRegularExpressionMatch m = re.match(output_);
      if (m.hasMatch()) {
        url_ = m.captured(1);
        emit stateChanged(true, tr("Server listening on %1").arg(url_));
        emit listening(url_);
      }
    }
  });
  connect(&process_, &QProcess::started, this,
          [this] { emit stateChanged(true, tr("Server running: %1").arg(process_.arguments().join(' '))); });
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError) {
    if (!stopping_) emit stateChanged(false, tr("The server could not run: %1").arg(process_.errorString()));
  });
  connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus) {
    const QString tail = output_.trimmed().section('\n', -3);
    // A GPU server that never listened (the chat's session already holds the VRAM, say) serves
    // from the CPU instead, saying why.
    if (!stopping_ && !restartPending_ && url_.isEmpty() && device_ == QLatin1String("cuda")) {
      emit stateChanged(false, tr("The server could not start on the GPU (%1); starting it on the CPU").arg(tail));
      start(modelRoot_, port_, QStringLiteral("cpu"));
      return;
    }
    emit stateChanged(false, stopping_ ? tr("Server stopped") : tr("The server exited (%1): %2").arg(code).arg(tail));
    stopping_ = false;
    url_.clear();
    if (std::exchange(restartPending_, false)) start(modelRoot_, port_, device_);
  });
}

ServerProcess::~ServerProcess() {
  stopping_ = true;
  if (isRunning()) {
    process_.terminate();
    if (!process_.waitForFinished(5000)) process_.kill();
    process_.waitForFinished(2000);
  }
}

void ServerProcess::start(const QString& modelRoot, int port, const QString& device) {
  if (isRunning()) return;
  output_.clear();
  url_.clear();
  modelRoot_ = modelRoot;
  port_ = port;
  device_ = device;
  stopping_ = false;
  process_.start(cliExecutable(),
                 {QStringLiteral("serve"), QStringLiteral("--model-root"), modelRoot, QStringLiteral("--port"),
                  QString::number(port), QStringLiteral("--device"), device});
}

void ServerProcess::restart(const QString& modelRoot, int port, const QString& device) {
  modelRoot_ = modelRoot;
  port_ = port;
  device_ = device;
  if (!isRunning()) {
    start(modelRoot, port, device);
    return;
  }
  restartPending_ = true;
  stopping_ = true;
  process_.terminate();
}

void ServerProcess::stop() {
  restartPending_ = false;
  if (!isRunning()) return;
  stopping_ = true;
  process_.terminate();
}

}  // namespace deltafin::gui
