#pragma once
// The app's persistent settings (QSettings), with their defaults in one place.
#include <QByteArray>
#include <QMap>
#include <QString>

#include "chat_types.h"

namespace deltafin::gui {

struct StudioSettings {
  QString modelFolder;                      // empty: the default model root
  bool useDemo = false;                     // run the bundled demo model instead of K3
  QString device = QStringLiteral("auto");  // "auto", "cpu", "cuda"
  bool ramCache = false;                    // engine RAM expert cache (full installs); else read through the page cache
  int ramCacheMiB = 0;                      // 0: sized from free memory
  bool directIo = true;                     // the RAM cache bypasses the page cache (O_DIRECT)
  QString cachePolicy = QStringLiteral("lfu");  // "lru", "lfu", "heat"
  QString drafter = QStringLiteral("auto");     // "auto", "off", "dspark", "qwen", "ngram"
  bool serverEnabled = false;
  int serverPort = 8080;
  bool remoteEnabled = false;
  QString remoteUrl = QStringLiteral("http://127.0.0.1:8080/v1");
  QString remoteModel;
  QString remoteApiKey;       // kept by ApiKeyStore (the system keychain), not in the settings file
  QString remoteApiKeyWhere;  // where load() found it, for Settings to say
  QString language;           // empty: follow the system
  int maxNewTokens = 256;
  bool wizardDone = false;
  bool enterSends = true;  // Enter sends, Shift+Enter starts a new line; false: Ctrl+Enter sends

  // The window as it was left: geometry, splitter positions (by splitter name), the chat panel.
  QByteArray windowGeometry;
  QMap<QString, QByteArray> splitters;
  bool chatOptionsOpen = false;

  // What of these the local engine applies.
  EngineOptions engineOptions() const;

  // `file`: an INI file; empty uses the platform's settings store for the app.
  static StudioSettings load(const QString& file = {});
  void save(const QString& file = {}) const;
};

}  // namespace deltafin::gui
