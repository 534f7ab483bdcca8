#include "install_runner.h"

namespace deltafin::gui {

QJsonObject InstallRequest::toJson() const {
  return QJsonObject{{"kind", kind == Kind::Upgrade ? QStringLiteral("upgrade") : QStringLiteral("install")},
                     {"stream", stream},
                     {"k3", k3},
                     {"with_dspark", withDspark},
                     {"with_qwen", withQwen},
                     {"model_root", modelRoot},
                     {"hub_url", hubUrl},
                     {"cache_cap", static_cast<double>(cacheCap)},
                     {"source_dir", sourceDir},
                     {"build_dir", buildDir},
                     {"dry_run", dryRun}};
}

InstallRequest InstallRequest::fromJson(const QJsonObject& o) {
  InstallRequest r;
  r.stream = o.value("stream").toBool();
  r.k3 = o.value("k3").toBool(true);
  r.withDspark = o.value("with_dspark").toBool(true);
  r.withQwen = o.value("with_qwen").toBool();
  r.modelRoot = o.value("model_root").toString();
  r.hubUrl = o.value("hub_url").toString();
  r.cacheCap = static_cast<quint64>(o.value("cache_cap").toDouble());
  r.kind = o.value("kind").toString() == QLatin1String("upgrade") ? Kind::Upgrade : Kind::Install;
  r.sourceDir = o.value("source_dir").toString();
  r.buildDir = o.value("build_dir").toString();
  r.dryRun = o.value("dry_run").toBool();
  return r;
}

}  // namespace deltafin::gui
