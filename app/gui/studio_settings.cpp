#include "studio_settings.h"

#include <QSettings>

#include "api_key_store.h"

#include <algorithm>
#include <memory>

namespace deltafin::gui {

namespace {
std::unique_ptr<QSettings> openSettings(const QString& file) {
  return file.isEmpty() ? std::make_unique<QSettings>() : std::make_unique<QSettings>(file, QSettings::IniFormat);
}
}  // namespace

StudioSettings StudioSettings::load(const QString& file) {
  auto store = openSettings(file);
  QSettings& s = *store;
  StudioSettings d;
  StudioSettings out;
  out.modelFolder = s.value("model/folder", d.modelFolder).toString();
  out.useDemo = s.value("model/useDemo", d.useDemo).toBool();
  out.device = s.value("engine/device", d.device).toString();
  out.ramCache = s.value("engine/ramCache", d.ramCache).toBool();
  // Older settings kept the budget in whole GiB.
  out.ramCacheMiB = s.contains("engine/ramCacheMiB") ? s.value("engine/ramCacheMiB").toInt()
                                                     : s.value("engine/ramCacheGiB", 0).toInt() * 1024;
  out.directIo = s.value("engine/directIo", d.directIo).toBool();
  out.cachePolicy = s.value("engine/cachePolicy", d.cachePolicy).toString();
  out.drafter = s.value("engine/drafter", d.drafter).toString();
  if (out.drafter == QLatin1String("none")) out.drafter = QStringLiteral("off");
  out.serverEnabled = s.value("server/enabled", d.serverEnabled).toBool();
  out.serverPort = s.value("server/port", d.serverPort).toInt();
  out.remoteEnabled = s.value("remote/enabled", d.remoteEnabled).toBool();
  out.remoteUrl = s.value("remote/url", d.remoteUrl).toString();
  out.remoteModel = s.value("remote/model", d.remoteModel).toString();
  // The key lives in the keychain (api_key_store.h); older versions kept it here in plain text.
  ApiKeyStore keys(file);
  if (s.contains("remote/apiKey")) {
    keys.write(s.value("remote/apiKey").toString());
    s.remove("remote/apiKey");
  }
  out.remoteApiKey = keys.read();
  out.remoteApiKeyWhere = keys.where();
  out.language = s.value("ui/language", d.language).toString();
  out.maxNewTokens = s.value("chat/maxNewTokens", d.maxNewTokens).toInt();
  out.wizardDone = s.value("ui/wizardDone", d.wizardDone).toBool();
  out.enterSends = s.value("chat/enterSends", d.enterSends).toBool();
  out.windowGeometry = s.value("window/geometry").toByteArray();
  out.chatOptionsOpen = s.value("window/chatOptionsOpen", d.chatOptionsOpen).toBool();
  s.beginGroup("splitters");
  for (const QString& key : s.childKeys()) out.splitters.insert(key, s.value(key).toByteArray());
  s.endGroup();
  return out;
}

EngineOptions StudioSettings::engineOptions() const {
  EngineOptions o;
  o.device = device;
  o.ramCache = ramCache;
  o.ramBudgetBytes = static_cast<quint64>(std::max(0, ramCacheMiB)) << 20;
  o.directIo = directIo;
  o.policy = cachePolicy;
  o.drafter = drafter;
  return o;
}

void StudioSettings::save(const QString& file) const {
  auto store = openSettings(file);
  QSettings& s = *store;
  s.setValue("model/folder", modelFolder);
  s.setValue("model/useDemo", useDemo);
  s.setValue("engine/device", device);
  s.setValue("engine/ramCache", ramCache);
  s.setValue("engine/ramCacheMiB", ramCacheMiB);
  s.remove("engine/ramCacheGiB");
  s.setValue("engine/directIo", directIo);
  s.setValue("engine/cachePolicy", cachePolicy);
  s.setValue("engine/drafter", drafter);
  s.setValue("server/enabled", serverEnabled);
  s.setValue("server/port", serverPort);
  s.setValue("remote/enabled", remoteEnabled);
  s.setValue("remote/url", remoteUrl);
  s.setValue("remote/model", remoteModel);
  s.remove("remote/apiKey");
  ApiKeyStore(file).write(remoteApiKey);
  s.setValue("ui/language", language);
  s.setValue("chat/maxNewTokens", maxNewTokens);
  s.setValue("ui/wizardDone", wizardDone);
  s.setValue("chat/enterSends", enterSends);
  s.setValue("window/geometry", windowGeometry);
  s.setValue("window/chatOptionsOpen", chatOptionsOpen);
  s.remove("splitters");
  s.beginGroup("splitters");
  for (auto it = splitters.begin(); it != splitters.end(); ++it) s.setValue(it.key(), it.value());
  s.endGroup();
}

}  // namespace deltafin::gui
