#pragma once
#include <QDateTime>
#include <QJsonObject>
#include <QMetaType>
#include <QString>

namespace deltafin::gui {

// One benchmark arm: a prompt of `promptTokens` prefilled, then `newTokens` greedy decode steps,
// repeated `repeats` times on a fresh session (the median run is reported).
struct BenchArm {
  QString name;
  int promptTokens = 64;
  int newTokens = 32;
  int repeats = 3;
};

struct BenchResult {
  QString arm;
  QString model;
  QString backend;
  QDateTime when;
  int promptTokens = 0, newTokens = 0, repeats = 0;
  double prefillTokensPerSecond = 0;
  double decodeTokensPerSecond = 0;
  double firstTokenSeconds = 0;
  double ramHitRate = 0, diskReadRate = 0, netFetchRate = 0;  // of expert lookups, 0..1
  quint64 expertBytes = 0;

  QJsonObject toJson() const;
  static BenchResult fromJson(const QJsonObject& o);
};

}  // namespace deltafin::gui

Q_DECLARE_METATYPE(deltafin::gui::BenchArm)
Q_DECLARE_METATYPE(deltafin::gui::BenchResult)
