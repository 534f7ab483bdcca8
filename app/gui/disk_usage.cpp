#include "disk_usage.h"

#include <QCoreApplication>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QStorageInfo>

#include <sys/stat.h>

#include <algorithm>

namespace deltafin::gui {
namespace {

quint64 allocatedBytes(const QString& path, quint64 fallback) {
  struct stat st {};
  if (::stat(QFile::encodeName(path).constData(), &st) != 0) return fallback;
  return static_cast<quint64>(st.st_blocks) * 512u;
}

void addFile(DiskUsagePart& part, const QFileInfo& fi) {
  part.apparent += static_cast<quint64>(fi.size());
  part.allocated += allocatedBytes(fi.absoluteFilePath(), static_cast<quint64>(fi.size()));
  ++part.files;
}

void addTree(DiskUsagePart& part, const QString& dir) {
  QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    it.next();
    addFile(part, it.fileInfo());
  }
}

}  // namespace

quint64 DiskUsage::totalAllocated() const {
  quint64 t = 0;
  for (const DiskUsagePart& p : parts) t += p.allocated;
  return t;
}

DiskUsage scanDiskUsage(const QString& root) {
  DiskUsage u;
  u.root = root;
  // Free space of the disk the folder is (or will be) on: the nearest existing parent's.
  QString existing = root;
  while (!existing.isEmpty() && !QFileInfo::exists(existing)) {
    const QString parent = QFileInfo(existing).absolutePath();
    if (parent == existing) break;
    existing = parent;
  }
  u.freeBytes = static_cast<quint64>(std::max<qint64>(0, QStorageInfo(existing).bytesAvailable()));
  const QDir dir(root);
  if (!dir.exists()) return u;

  DiskUsagePart shards{
      QStringLiteral("shards"), QCoreApplication::translate("DiskUsage", "Model shards"), root, 0, 0, 0};
  DiskUsagePart meta{QStringLiteral("metadata"),
                     QCoreApplication::translate("DiskUsage", "Configuration and tokenizer"),
                     root,
                     0,
                     0,
                     0};
  for (const QFileInfo& fi : dir.entryInfoList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot)) {
    if (fi.suffix() == QLatin1String("safetensors")) addFile(shards, fi);
    else addFile(meta, fi);
  }
  u.parts << shards << meta;

  const QDir addons(root + QStringLiteral("/addons"));
  for (const QFileInfo& fi : addons.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    DiskUsagePart p{QStringLiteral("addons/") + fi.fileName(),
                    QCoreApplication::translate("DiskUsage", "Add-on: %1").arg(fi.fileName()),
                    fi.absoluteFilePath(),
                    0,
                    0,
                    0};
    addTree(p, fi.absoluteFilePath());
    u.parts << p;
  }
  const QString state = root + QStringLiteral("/.deltafin");
  if (QFileInfo(state).isDir()) {
    DiskUsagePart p{QStringLiteral("state"),
                    QCoreApplication::translate("DiskUsage", "Install records, cache index and heat"),
                    state,
                    0,
                    0,
                    0};
    addTree(p, state);
    u.parts << p;
  }
  // Anything else under the root (user files, other folders) is shown rather than hidden.
  DiskUsagePart other{QStringLiteral("other"), QCoreApplication::translate("DiskUsage", "Other files"), root, 0, 0, 0};
  for (const QFileInfo& fi : dir.entryInfoList(QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot)) {
    if (fi.fileName() == QLatin1String("addons") || fi.fileName() == QLatin1String(".deltafin")) continue;
    addTree(other, fi.absoluteFilePath());
  }
  if (other.files > 0) u.parts << other;
  return u;
}

}  // namespace deltafin::gui
