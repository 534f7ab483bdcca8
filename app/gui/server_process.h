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

  void start(const QString& modelRoot, int port);
  void stop();
  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  QString lastOutput() const { return output_; }

 signals:
  void stateChanged(bool running, const QString& message);

 private:
  QProcess process_;
  QString output_;
  bool stopping_ = false;
};

}  // namespace deltafin::gui
