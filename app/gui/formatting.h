#pragma once
// Numbers as the user reads them, in the current language.
#include <QString>

#include "chat_types.h"

namespace deltafin::gui {

QString formatBytes(quint64 bytes);                 // "1.56 TB", decimal units as the Hub shows sizes
QString formatDuration(double seconds);             // "3 min 20 s"
QString formatSpeed(double bytesPerSecond);         // "12.4 MB/s"
QString formatPercent(double fraction);             // 0.5 -> "50.0 %"
QString formatStats(const GenerationStats& stats);  // "24.1 tok/s · first token 0.35 s · 57 tokens"

}  // namespace deltafin::gui
