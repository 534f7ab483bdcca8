#pragma once
// The app's persistent settings (QSettings), with their defaults in one place.
#include <QString>

namespace deltafin::gui {

struct StudioSettings {
  QString modelFolder;       // empty: the default model root
  bool useDemo = false;      // run the bundled demo model instead of K3
  QString device = QStringLiteral("auto");  // "auto", "cpu", "cuda"
  int ramCacheGiB = 0;       // 0: sized from free memory
  int vramCacheGiB = 0;
  QString drafter = QStringLiteral("dspark");  // "none", "dspark", "qwen"
  bool serverEnabled = false;
  int serverPort = 8080;
  bool remoteEnabled = false;
  QString remoteUrl = QStringLiteral("http://127.0.0.1:8080/v1");
  QString remoteModel;
  QString remoteApiKey;
  QString language;          // empty: follow the system
  int maxNewTokens = 256;
  bool wizardDone = false;

  // `file`: an INI file; empty uses the platform's settings store for the app.
  static StudioSettings load(const QString& file = {});
  void save(const QString& file = {}) const;
};

}  // namespace deltafin::gui
