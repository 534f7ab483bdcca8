#pragma once
// Disk usage of every part of an install, counted in allocated blocks so the holes of sparse
// stream shards are not counted as used space.
#include <QList>
#include <QMetaType>
#include <QString>

namespace deltafin::gui {

struct DiskUsagePart {
  QString key;    // "shards", "metadata", "addons/<folder>", "state"
  QString label;  // translated, for display
  QString path;
  quint64 allocated = 0;  // bytes on disk
  quint64 apparent = 0;   // file sizes
  int files = 0;
};

struct DiskUsage {
  QString root;
  QList<DiskUsagePart> parts;
  quint64 freeBytes = 0;
  quint64 totalAllocated() const;
};

// Walks `root` (blocking; call it off the GUI thread for real installs).
DiskUsage scanDiskUsage(const QString& root);

}  // namespace deltafin::gui

Q_DECLARE_METATYPE(deltafin::gui::DiskUsage)
