#pragma once
// A setup or add-on install running in the background. Pause stops the transfer and keeps
// every byte already on disk; resume starts the install again, which skips verified files and
// continues partial ones. Events from the install thread are posted to the GUI thread.
#include <QDateTime>
#include <QObject>
#include <QPointer>
#include <QStringList>
#include <QThread>

#include <atomic>

#include "install_runner.h"

namespace deltafin::gui {

class InstallJob : public QObject {
  Q_OBJECT
 public:
  enum class State { Queued, Running, Pausing, Paused, Cancelling, Cancelled, Failed, Done };
  Q_ENUM(State)

  InstallJob(QString id, QString title, InstallRequest request, QObject* parent = nullptr);
  ~InstallJob() override;

  const QString& id() const { return id_; }
  const QString& title() const { return title_; }
  const InstallRequest& request() const { return request_; }
  State state() const { return state_; }
  QString stateText() const;
  const InstallProgressView& progress() const { return progress_; }
  const QStringList& log() const { return log_; }
  QString errorWhat() const { return errorWhat_; }
  QString errorTodo() const { return errorTodo_; }
  QDateTime created() const { return created_; }
  bool isActive() const { return state_ == State::Running || state_ == State::Pausing || state_ == State::Cancelling; }

  QJsonObject toJson() const;
  static InstallJob* fromJson(const QJsonObject& o, QObject* parent);

 public slots:
  void start();
  void pause();
  void resume();
  void cancel();

 signals:
  void changed();                     // state, error or progress
  void stateChanged(deltafin::gui::InstallJob::State state);
  void logAppended(const QString& line);

 private:
  void setState(State s);
  void appendLog(const QString& line);
  void runFinished(bool ok, const QString& what, const QString& todo);

  QString id_, title_;
  InstallRequest request_;
  State state_ = State::Queued;
  InstallProgressView progress_;
  QStringList log_;
  QString errorWhat_, errorTodo_;
  QDateTime created_;
  QPointer<QThread> thread_;
  std::atomic<bool> cancel_{false};
};

}  // namespace deltafin::gui
