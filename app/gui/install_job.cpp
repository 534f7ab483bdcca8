#include "install_job.h"

#include <QJsonArray>

#include "base/error.h"

namespace deltafin::gui {
namespace {
constexpr int kLogLines = 500;  // kept in memory and in jobs.json
}

InstallJob::InstallJob(QString id, QString title, InstallRequest request, QObject* parent)
    : QObject(parent),
      id_(std::move(id)),
      title_(std::move(title)),
      request_(std::move(request)),
      created_(QDateTime::currentDateTime()) {}

InstallJob::~InstallJob() {
  if (thread_) {
    cancel_.store(true);
    thread_->wait();
  }
}

QString InstallJob::stateText() const {
  switch (state_) {
    case State::Queued:
      return tr("Queued");
    case State::Running:
      return tr("Running");
    case State::Pausing:
      return tr("Pausing…");
    case State::Paused:
      return tr("Paused");
    case State::Cancelling:
      return tr("Cancelling…");
    case State::Cancelled:
      return tr("Cancelled");
    case State::Failed:
      return tr("Failed");
    case State::Done:
      return tr("Done");
  }
  return {};
}

void InstallJob::setState(State s) {
  if (state_ == s) return;
  state_ = s;
  emit stateChanged(s);
  emit changed();
}

void InstallJob::appendLog(const QString& line) {
  log_.push_back(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line);
  while (log_.size() > kLogLines) log_.pop_front();
  emit logAppended(log_.back());
}

void InstallJob::start() {
  if (isActive() || thread_) return;
  cancel_.store(false);
  errorWhat_.clear();
  errorTodo_.clear();
  outcome_.clear();
  setState(State::Running);
  appendLog(tr("Started"));
  const InstallRequest req = request_;
  QPointer<InstallJob> self(this);
  // Callbacks run on the install thread; everything they touch is handed to the GUI thread.
  InstallCallbacks cb;
  cb.message = [self](const QString& text) {
    QMetaObject::invokeMethod(
        self,
        [self, text] {
          if (self) self->appendLog(text);
        },
        Qt::QueuedConnection);
  };
  cb.progress = [self](const InstallProgressView& p) {
    QMetaObject::invokeMethod(
        self,
        [self, p] {
          if (!self) return;
          self->progress_ = p;
          emit self->changed();
        },
        Qt::QueuedConnection);
  };
  cb.error = [self](const QString& what, const QString& todo) {
    QMetaObject::invokeMethod(
        self,
        [self, what, todo] {
          if (self) self->appendLog(todo.isEmpty() ? what : what + QStringLiteral(" — ") + todo);
        },
        Qt::QueuedConnection);
  };
  QThread* t = QThread::create([this, req, cb, self] {
    bool ok = false;
    QString what, todo, outcome;
    try {
      if (req.kind == InstallRequest::Kind::Upgrade) outcome = runUpgrade(req, cb);
      else runInstall(req, cb, &cancel_);
      ok = true;
    } catch (const Error& e) {
      what = QString::fromStdString(e.what_failed());
      todo = QString::fromStdString(e.what_to_do());
    } catch (const std::exception& e) {
      what = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        self,
        [self, ok, what, todo, outcome] {
          if (self) self->runFinished(ok, what, todo, outcome);
        },
        Qt::QueuedConnection);
  });
  t->setObjectName(QStringLiteral("deltafin-install"));
  connect(t, &QThread::finished, t, &QObject::deleteLater);
  thread_ = t;
  t->start();
}

void InstallJob::runFinished(bool ok, const QString& what, const QString& todo, const QString& outcome) {
  if (thread_) thread_->wait();
  thread_ = nullptr;
  if (ok && !cancel_.load()) {
    progress_.bytesDone = progress_.bytesTotal;
    progress_.etaSeconds = 0;
    outcome_ = outcome;
    appendLog(outcome.isEmpty() ? tr("Finished") : tr("Finished: %1").arg(outcome));
    setState(State::Done);
  } else if (state_ == State::Pausing) {
    appendLog(tr("Paused; the bytes on disk are kept"));
    setState(State::Paused);
  } else if (state_ == State::Cancelling) {
    appendLog(tr("Cancelled; verified files are kept, run setup again to finish"));
    setState(State::Cancelled);
  } else {
    errorWhat_ = what.isEmpty() ? (isUpgrade() ? tr("the upgrade stopped") : tr("the install stopped")) : what;
    errorTodo_ = todo;
    appendLog(tr("Failed: %1").arg(todo.isEmpty() ? errorWhat_ : errorWhat_ + QStringLiteral(" — ") + todo));
    setState(State::Failed);
  }
}

void InstallJob::pause() {
  if (!canPause()) return;
  if (state_ == State::Running) {
    setState(State::Pausing);
    cancel_.store(true);
  } else if (state_ == State::Queued) {
    setState(State::Paused);
  }
}

void InstallJob::resume() {
  if (state_ == State::Paused || state_ == State::Failed || state_ == State::Cancelled) {
    appendLog(tr("Resuming"));
    start();
  }
}

void InstallJob::cancel() {
  if (isUpgrade() && isActive()) return;  // git and CMake finish their step; the log says how it ended
  if (state_ == State::Running || state_ == State::Pausing) {
    setState(State::Cancelling);
    cancel_.store(true);
  } else if (state_ == State::Paused || state_ == State::Queued || state_ == State::Failed) {
    appendLog(tr("Cancelled; verified files are kept, run setup again to finish"));
    setState(State::Cancelled);
  }
}

QJsonObject InstallJob::toJson() const {
  // A job that is running when the app quits is saved as running, so it resumes on next start.
  QString state;
  switch (state_) {
    case State::Queued:
      state = QStringLiteral("queued");
      break;
    case State::Running:
    case State::Pausing:
    case State::Cancelling:
      state = QStringLiteral("running");
      break;
    case State::Paused:
      state = QStringLiteral("paused");
      break;
    case State::Cancelled:
      state = QStringLiteral("cancelled");
      break;
    case State::Failed:
      state = QStringLiteral("failed");
      break;
    case State::Done:
      state = QStringLiteral("done");
      break;
  }
  if (state_ == State::Pausing) state = QStringLiteral("paused");
  if (state_ == State::Cancelling) state = QStringLiteral("cancelled");
  // An upgrade is never restarted by itself: the next start reports that it was interrupted.
  if (isUpgrade() && isActive()) state = QStringLiteral("interrupted");
  return QJsonObject{{"id", id_},
                     {"title", title_},
                     {"state", state},
                     {"created", created_.toString(Qt::ISODate)},
                     {"request", request_.toJson()},
                     {"bytes_done", static_cast<double>(progress_.bytesDone)},
                     {"bytes_total", static_cast<double>(progress_.bytesTotal)},
                     {"error_what", errorWhat_},
                     {"error_todo", errorTodo_},
                     {"outcome", outcome_},
                     {"log", QJsonArray::fromStringList(log_)}};
}

InstallJob* InstallJob::fromJson(const QJsonObject& o, QObject* parent) {
  auto* job = new InstallJob(o.value("id").toString(), o.value("title").toString(),
                             InstallRequest::fromJson(o.value("request").toObject()), parent);
  job->created_ = QDateTime::fromString(o.value("created").toString(), Qt::ISODate);
  const QString state = o.value("state").toString();
  job->state_ = state == QLatin1String("done")        ? State::Done
                : state == QLatin1String("failed")    ? State::Failed
                : state == QLatin1String("cancelled") ? State::Cancelled
                : state == QLatin1String("queued")    ? State::Queued
                                                      : State::Paused;  // running or paused: resumable
  job->progress_.bytesDone = static_cast<quint64>(o.value("bytes_done").toDouble());
  job->progress_.bytesTotal = static_cast<quint64>(o.value("bytes_total").toDouble());
  job->errorWhat_ = o.value("error_what").toString();
  job->errorTodo_ = o.value("error_todo").toString();
  job->outcome_ = o.value("outcome").toString();
  if (state == QLatin1String("interrupted")) {
    job->state_ = State::Failed;
    job->errorWhat_ = tr("the app quit while this upgrade was running");
    job->errorTodo_ = tr("run it again with Resume: an upgrade that had finished reports that it is up to date");
  }
  for (const QJsonValue& v : o.value("log").toArray()) job->log_.push_back(v.toString());
  return job;
}

}  // namespace deltafin::gui
