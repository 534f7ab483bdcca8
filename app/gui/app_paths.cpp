#include "app_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace deltafin::gui {

QString bundledDemoModel() {
  const QDir bin(QCoreApplication::applicationDirPath());
  for (const QString& rel : {QStringLiteral("../demo-model"), QStringLiteral("../share/deltafin/demo-model")}) {
    const QString dir = QDir::cleanPath(bin.absoluteFilePath(rel));
    if (hasModel(dir)) return dir;
  }
  return {};
}

QString defaultModelRoot() {
  const QString env = qEnvironmentVariable("DELTAFIN_MODEL_ROOT");
  if (!env.isEmpty()) return env;
  QString data = qEnvironmentVariable("XDG_DATA_HOME");
  if (data.isEmpty()) data = QDir::homePath() + QStringLiteral("/.local/share");
  return data + QStringLiteral("/deltafin/models/kimi-k3");
}

bool hasModel(const QString& dir) { return !dir.isEmpty() && QFileInfo::exists(dir + QStringLiteral("/config.json")); }

QString cliExecutable() {
  const QString local = QCoreApplication::applicationDirPath() + QStringLiteral("/deltafin");
  if (QFileInfo(local).isExecutable()) return local;
  const QString onPath = QStandardPaths::findExecutable(QStringLiteral("deltafin"));
  return onPath.isEmpty() ? QStringLiteral("deltafin") : onPath;
}

}  // namespace deltafin::gui
