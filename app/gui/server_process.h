#pragma once
// The local OpenAI-compatible server (`deltafin serve`) as a child process, switched from
// Settings. It is a separate process so that it keeps its own model and does not compete with
// the chat's engine thread for the session.
#include <QObject>
#include <QProcess>

namespace deltafin::gui {

class ServerProcess : public QObject {
  Q_OBJECT
 public:
  explicit ServerProcess(QObject* parent = nullptr);
  ~ServerProcess() override;

  // port 0: any free port; device: "cpu" or "cuda" (what `deltafin serve --device` takes).
  void start(const QString& modelRoot, int port, const QString& device);
  void stop();
  // Stops the running server, then starts it with these.
  void restart(const QString& modelRoot, int port, const QString& device);
  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  const QString& modelRoot() const { return modelRoot_; }
  int port() const { return port_; }
  const QString& device() const { return device_; }
  // The command line of the server last started (without the program).
  QStringList arguments() const { return process_.arguments(); }
  // The address the server printed once it listens ("http://127.0.0.1:PORT"); empty until then.
  const QString& url() const { return url_; }
  QString lastOutput() const { return output_; }

 signals:
  void stateChanged(bool running, const QString& message);
  void listening(const QString& url);

 private:
  QProcess process_;
  QString output_;
  QString modelRoot_, url_, device_;
  int port_ = 0;
  bool stopping_ = false;
  bool restartPending_ = false;
};

}  // namespace deltafin::gui
