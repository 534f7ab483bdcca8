// deltafin_render_icons OUTDIR SIZE...: writes OUTDIR/<s>x<s>/apps/io.github.deltafin.Studio.png (build step).
#include <QDir>
#include <QGuiApplication>
#include <QTextStream>

#include "studio_icon.h"

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  const QStringList args = app.arguments();
  if (args.size() < 3) {
    QTextStream(stderr) << "usage: deltafin_render_icons OUTDIR SIZE...\n";
    return 2;
  }
  for (int i = 2; i < args.size(); ++i) {
    const int size = args[i].toInt();
    const QString dir = QStringLiteral("%1/%2x%2/apps").arg(args[1]).arg(size);
    if (size <= 0 || !QDir().mkpath(dir) ||
        !deltafin::gui::paintStudioIcon(size).save(dir + "/io.github.deltafin.Studio.png")) {
      QTextStream(stderr) << "deltafin_render_icons: cannot write " << dir << "/io.github.deltafin.Studio.png\n";
      return 1;
    }
  }
  return 0;
}
