#pragma once
// Where the app keeps the remote engine's API key: the system keychain (QtKeychain: Secret
// Service, KWallet, macOS Keychain), or where no keychain answers, an owner-only file (mode
// 0600) beside the settings. Never in the settings themselves, which are plain text.
#include <QString>

namespace deltafin::gui {

class ApiKeyStore {
 public:
  // `settingsFile`: the INI file the settings live in (tests); empty: the app's own settings.
  explicit ApiKeyStore(const QString& settingsFile = {});

  QString read();
  void write(const QString& key);  // an empty key removes it
  // Where the key was last read from or written to, for Settings: "the system keychain" or the file.
  QString where() const { return where_; }
  bool inKeychain() const { return inKeychain_; }
  QString fallbackFile() const { return fallback_; }

 private:
  bool keychainRead(QString& key);
  bool keychainWrite(const QString& key);
  QString account_, fallback_, where_;
  bool inKeychain_ = false;
};

}  // namespace deltafin::gui
