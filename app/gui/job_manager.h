#pragma once
// Every background install, saved to jobs.json on each state change so that jobs survive an
// app restart: a job that was running when the app quit resumes when it starts again.
#include <QList>
#include <QObject>

#include "install_job.h"

namespace deltafin::gui {

class JobManager : public QObject {
  Q_OBJECT
 public:
  explicit JobManager(QString path, QObject* parent = nullptr);
  ~JobManager() override;

  const QList<InstallJob*>& jobs() const { return jobs_; }
  InstallJob* find(const QString& id) const;
  // Adds and starts a job.
  InstallJob* startInstall(const QString& title, const InstallRequest& request);
  void remove(const QString& id);  // finished, failed or cancelled jobs only
  // Jobs that were running at the last exit start again (call once the GUI is up).
  void resumeInterrupted();
  bool hasActiveJobs() const;

 signals:
  void jobAdded(deltafin::gui::InstallJob* job);
  void jobRemoved(const QString& id);
  void jobChanged(deltafin::gui::InstallJob* job);

 private:
  void adopt(InstallJob* job);
  void save() const;
  void load();

  QString path_;
  QList<InstallJob*> jobs_;
  QStringList interrupted_;
};

}  // namespace deltafin::gui
