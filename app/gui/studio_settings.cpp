#include "studio_settings.h"

#include <QSettings>

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
  out.ramCacheGiB = s.value("engine/ramCacheGiB", d.ramCacheGiB).toInt();
  out.vramCacheGiB = s.value("engine/vramCacheGiB", d.vramCacheGiB).toInt();
  out.drafter = s.value("engine/drafter", d.drafter).toString();
  out.serverEnabled = s.value("server/enabled", d.serverEnabled).toBool();
  out.serverPort = s.value("server/port", d.serverPort).toInt();
  out.remoteEnabled = s.value("remote/enabled", d.remoteEnabled).toBool();
  out.remoteUrl = s.value("remote/url", d.remoteUrl).toString();
  out.remoteModel = s.value("remote/model", d.remoteModel).toString();
  out.remoteApiKey = s.value("remote/apiKey", d.remoteApiKey).toString();
  out.language = s.value("ui/language", d.language).toString();
  out.maxNewTokens = s.value("chat/maxNewTokens", d.maxNewTokens).toInt();
  out.wizardDone = s.value("ui/wizardDone", d.wizardDone).toBool();
  return out;
}

void StudioSettings::save(const QString& file) const {
  auto store = openSettings(file);
  QSettings& s = *store;
  s.setValue("model/folder", modelFolder);
  s.setValue("model/useDemo", useDemo);
  s.setValue("engine/device", device);
  s.setValue("engine/ramCacheGiB", ramCacheGiB);
  s.setValue("engine/vramCacheGiB", vramCacheGiB);
  s.setValue("engine/drafter", drafter);
  s.setValue("server/enabled", serverEnabled);
  s.setValue("server/port", serverPort);
  s.setValue("remote/enabled", remoteEnabled);
  s.setValue("remote/url", remoteUrl);
  s.setValue("remote/model", remoteModel);
  s.setValue("remote/apiKey", remoteApiKey);
  s.setValue("ui/language", language);
  s.setValue("chat/maxNewTokens", maxNewTokens);
  s.setValue("ui/wizardDone", wizardDone);
}

}  // namespace deltafin::gui
