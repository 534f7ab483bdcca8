#include "job_manager.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <QUuid>

#include <utility>

namespace deltafin::gui {

JobManager::JobManager(QString path, QObject* parent) : QObject(parent), path_(std::move(path)) { load(); }

JobManager::~JobManager() {
  // Saved before the jobs stop, so that running ones are recorded as running and resume next time.
  save();
  for (InstallJob* j : jobs_) disconnect(j, nullptr, this, nullptr);
}

InstallJob* JobManager::find(const QString& id) const {
  for (InstallJob* j : jobs_)
    if (j->id() == id) return j;
  return nullptr;
}

void JobManager::adopt(InstallJob* job) {
  jobs_.push_back(job);
  connect(job, &InstallJob::stateChanged, this, [this, job] {
    save();
    emit jobChanged(job);
  });
  connect(job, &InstallJob::changed, this, [this, job] { emit jobChanged(job); });
}

InstallJob* JobManager::startInstall(const QString& title, const InstallRequest& request) {
  auto* job = new InstallJob(QUuid::createUuid().toString(QUuid::WithoutBraces), title, request, this);
  adopt(job);
  save();
  emit jobAdded(job);
  job->start();
  return job;
}

void JobManager::remove(const QString& id) {
  InstallJob* job = find(id);
  if (!job || job->isActive()) return;
  jobs_.removeAll(job);
  save();
  emit jobRemoved(id);
  job->deleteLater();
}

void JobManager::resumeInterrupted() {
  const QStringList ids = std::exchange(interrupted_, {});
  for (const QString& id : ids)
    if (InstallJob* j = find(id)) j->resume();
}

bool JobManager::hasActiveJobs() const {
  for (InstallJob* j : jobs_)
    if (j->isActive()) return true;
  return false;
}

void JobManager::save() const {
  QJsonArray list;
  for (const InstallJob* j : jobs_) list.push_back(j->toJson());
  QDir().mkpath(QFileInfo(path_).absolutePath());
  QSaveFile f(path_);
  if (!f.open(QIODevice::WriteOnly)) return;
  f.write(QJsonDocument(QJsonObject{{"version", 1}, {"jobs", list}}).toJson(QJsonDocument::Indented));
  f.commit();
}

void JobManager::load() {
  QFile f(path_);
  if (!f.open(QIODevice::ReadOnly)) return;
  const QJsonArray list = QJsonDocument::fromJson(f.readAll()).object().value("jobs").toArray();
  for (const QJsonValue& v : list) {
    const QJsonObject o = v.toObject();
    if (o.value("id").toString().isEmpty()) continue;
    InstallJob* job = InstallJob::fromJson(o, this);
    if (o.value("state").toString() == QLatin1String("running")) interrupted_.push_back(job->id());
    adopt(job);
  }
}

}  // namespace deltafin::gui
