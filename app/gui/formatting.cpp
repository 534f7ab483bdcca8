#include "formatting.h"

#include <QCoreApplication>
#include <QLocale>

namespace deltafin::gui {
QString formatBytes(quint64 bytes) {
  return QLocale().formattedDataSize(static_cast<qint64>(bytes), 2, QLocale::DataSizeSIFormat);
}

QString formatDuration(double seconds) {
  if (seconds < 0) return QCoreApplication::translate("Formatting", "unknown");
  const qint64 s = static_cast<qint64>(seconds + 0.5);
  if (s < 60) return QCoreApplication::translate("Formatting", "%1 s").arg(s);
  if (s < 3600) return QCoreApplication::translate("Formatting", "%1 min %2 s").arg(s / 60).arg(s % 60);
  return QCoreApplication::translate("Formatting", "%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

QString formatSpeed(double bytesPerSecond) {
  return QCoreApplication::translate("Formatting", "%1/s")
      .arg(formatBytes(static_cast<quint64>(bytesPerSecond > 0 ? bytesPerSecond : 0)));
}

QString formatPercent(double fraction) { return QLocale().toString(fraction * 100.0, 'f', 1) + QStringLiteral(" %"); }

QString formatStats(const GenerationStats& s) {
  QString text = QCoreApplication::translate("Formatting", "%1 tok/s · first token %2 s · %3 tokens")
                     .arg(QLocale().toString(s.decodeTokensPerSecond, 'f', 1))
                     .arg(QLocale().toString(s.firstTokenSeconds, 'f', 2))
                     .arg(s.newTokens);
  if (s.proposed > 0)
    text += QCoreApplication::translate("Formatting", " · %1: %2 of %3 guesses accepted")
                .arg(s.drafter)
                .arg(s.accepted)
                .arg(s.proposed);
  if (s.stoppedByUser) text += QCoreApplication::translate("Formatting", " · stopped");
  return text;
}

}  // namespace deltafin::gui
