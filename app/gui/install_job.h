#pragma once
// A setup, add-on install or upgrade running in the background. Pause stops a transfer and keeps
// every byte already on disk; resume starts the install again, which skips verified files and
// continues partial ones. An upgrade (git fast-forward and rebuild) cannot be paused or
// cancelled halfway; a failed one can be run again. Events from the job's thread are posted to
// the GUI thread.
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
  bool isUpgrade() const { return request_.kind == InstallRequest::Kind::Upgrade; }
  // Installs stop between byte ranges; an upgrade's git and CMake steps must not be cut off.
  bool canPause() const { return !isUpgrade(); }
  // What a finished job achieved in one line (an upgrade's outcome); empty for installs.
  QString outcome() const { return outcome_; }

  QJsonObject toJson() const;
  static InstallJob* fromJson(const QJsonObject& o, QObject* parent);

 public slots:
  void start();
  void pause();
  void resume();
  void cancel();

 signals:
  void changed();  // state, error or progress
  void stateChanged(deltafin::gui::InstallJob::State state);
  void logAppended(const QString& line);

 private:
  void setState(State s);
  void appendLog(const QString& line);
  void runFinished(bool ok, const QString& what, const QString& todo, const QString& outcome);

  QString id_, title_;
  InstallRequest request_;
  State state_ = State::Queued;
  InstallProgressView progress_;
  QStringList log_;
  QString errorWhat_, errorTodo_, outcome_;
  QDateTime created_;
  QPointer<QThread> thread_;
  std::atomic<bool> cancel_{false};
};

}  // namespace deltafin::gui
