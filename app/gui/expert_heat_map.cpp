#include "expert_heat_map.h"

#include <QCoreApplication>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace deltafin::gui {
namespace {

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}

// Ranks instead of raw values, so one very hot (or very old) expert does not wash out the rest.
template <typename T>
QVector<double> ranks(const QVector<T>& values) {
  QVector<T> seen;
  for (T v : values)
    if (v) seen.push_back(v);
  std::sort(seen.begin(), seen.end());
  QVector<double> out(values.size(), 0.0);
  for (int i = 0; i < values.size(); ++i) {
    if (!values[i]) continue;
    const auto pos = std::lower_bound(seen.begin(), seen.end(), values[i]) - seen.begin();
    out[i] = seen.size() > 1 ? static_cast<double>(pos) / (seen.size() - 1) : 1.0;
  }
  return out;
}

}  // namespace

QString tierName(ExpertTier tier) {
  switch (tier) {
    case ExpertTier::Vram:
      return QCoreApplication::translate("deltafin::gui::ExpertHeatMap", "VRAM");
    case ExpertTier::Ram:
      return QCoreApplication::translate("deltafin::gui::ExpertHeatMap", "RAM");
    case ExpertTier::Disk:
      return QCoreApplication::translate("deltafin::gui::ExpertHeatMap", "disk");
    case ExpertTier::Network:
      return QCoreApplication::translate("deltafin::gui::ExpertHeatMap", "not fetched");
  }
  return {};
}

ExpertHeatMap::ExpertHeatMap(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("tierMap"));
  setFocusPolicy(Qt::StrongFocus);
  setAccessibleName(tr("Experts per layer by tier"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QSize ExpertHeatMap::sizeHint() const { return {640, std::max(120, snap_.layers * 10 + 30)}; }

void ExpertHeatMap::setSnapshot(const CacheSnapshot& s) {
  snap_ = s;
  heat_ = !s.uses.isEmpty() ? ranks(s.uses) : ranks(s.lastUse);
  heat_.resize(s.layers * s.experts);
  if (selectedLayer_ >= s.layers) selectedLayer_ = -1;
  setAccessibleDescription(tr("%1 layers of %2 experts: %3 in VRAM, %4 in RAM, %5 on disk, %6 not fetched")
                               .arg(s.layers)
                               .arg(s.experts)
                               .arg(s.count(ExpertTier::Vram))
                               .arg(s.count(ExpertTier::Ram))
                               .arg(s.count(ExpertTier::Disk))
                               .arg(s.count(ExpertTier::Network)));
  updateGeometry();
  update();
}

void ExpertHeatMap::setSelectedLayer(int layer) {
  if (layer < 0 || layer >= snap_.layers || layer == selectedLayer_) return;
  selectedLayer_ = layer;
  update();
  emit layerSelected(layer);
}

QColor ExpertHeatMap::tierColor(ExpertTier tier) const {
  // Hues that stay apart for common colour blindness (blue/orange axis, green lighter).
  switch (tier) {
    case ExpertTier::Vram:
      return QColor(0x2e, 0xa0, 0x43);
    case ExpertTier::Ram:
      return QColor(0x1f, 0x6f, 0xd0);
    case ExpertTier::Disk:
      return QColor(0xe0, 0x8a, 0x1e);
    case ExpertTier::Network:
      return palette().color(QPalette::Mid);
  }
  return palette().color(QPalette::Mid);
}

QColor ExpertHeatMap::cellColor(int layer, int expert) const {
  const ExpertTier t = snap_.tier(layer, expert);
  const QColor base = palette().color(QPalette::Base);
  if (t == ExpertTier::Network) return mix(base, tierColor(t), 0.35);
  // Never used: a faint tint of the tier; the most used: the tier's full colour.
  return mix(base, tierColor(t), 0.3 + 0.7 * heat(layer, expert));
}

QString ExpertHeatMap::describeLayer(int layer) const {
  QStringList parts;
  for (ExpertTier t : {ExpertTier::Vram, ExpertTier::Ram, ExpertTier::Disk, ExpertTier::Network})
    if (const int n = snap_.count(layer, t)) parts << QStringLiteral("%1 %2").arg(tierName(t)).arg(n);
  return tr("Layer %1: %2").arg(layer).arg(parts.join(QStringLiteral(" · ")));
}

QRectF ExpertHeatMap::grid() const { return QRectF(rect()).adjusted(36, 4, -4, -4); }

bool ExpertHeatMap::cellAt(QPointF pos, int* layer, int* expert) const {
  const QRectF g = grid();
  if (snap_.layers == 0 || snap_.experts == 0 || !g.contains(pos)) return false;
  *layer = std::clamp(static_cast<int>((pos.y() - g.top()) / (g.height() / snap_.layers)), 0, snap_.layers - 1);
  *expert = std::clamp(static_cast<int>((pos.x() - g.left()) / (g.width() / snap_.experts)), 0, snap_.experts - 1);
  return true;
}

bool ExpertHeatMap::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    int layer = 0, expert = 0;
    if (!cellAt(help->pos(), &layer, &expert)) {
      QToolTip::hideText();
      event->ignore();
      return true;
    }
    const int i = layer * snap_.experts + expert;
    QString cell = tr("Expert %1: %2").arg(expert).arg(tierName(snap_.tier(layer, expert)));
    if (!snap_.uses.isEmpty()) cell += tr(", used %n time(s)", nullptr, static_cast<int>(snap_.uses.value(i)));
    QToolTip::showText(help->globalPos(), describeLayer(layer) + QLatin1Char('\n') + cell, this);
    return true;
  }
  return QWidget::event(event);
}

void ExpertHeatMap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (snap_.layers == 0 || snap_.experts == 0) {
    p.setPen(palette().text().color());
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("No model is loaded"));
    return;
  }
  const QRectF g = grid();
  const double cw = g.width() / snap_.experts, ch = g.height() / snap_.layers;
  p.setPen(palette().text().color());
  QFont f = font();
  f.setPointSizeF(std::max(6.0, std::min(9.0, ch * 0.8)));
  p.setFont(f);
  const int labelEvery = std::max(1, static_cast<int>(12 / std::max(1.0, ch)));
  for (int l = 0; l < snap_.layers; ++l) {
    if (l % labelEvery == 0)
      p.drawText(QRectF(0, g.top() + l * ch, 32, ch), Qt::AlignRight | Qt::AlignVCenter, QString::number(l));
    for (int e = 0; e < snap_.experts; ++e)
      p.fillRect(QRectF(g.left() + e * cw, g.top() + l * ch, std::max(1.0, cw - (cw > 3 ? 1 : 0)),
                        std::max(1.0, ch - (ch > 3 ? 1 : 0))),
                 cellColor(l, e));
  }
  if (selectedLayer_ >= 0) {
    p.setPen(QPen(palette().highlight().color(), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(g.left(), g.top() + selectedLayer_ * ch, g.width(), ch));
  }
  if (hasFocus()) {
    QPen focus(palette().highlight().color(), 1, Qt::DashLine);
    p.setPen(focus);
    p.drawRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5));
  }
}

void ExpertHeatMap::mousePressEvent(QMouseEvent* event) {
  int layer = 0, expert = 0;
  if (cellAt(event->position(), &layer, &expert)) setSelectedLayer(layer);
}

void ExpertHeatMap::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Down) setSelectedLayer(std::min(snap_.layers - 1, selectedLayer_ + 1));
  else if (event->key() == Qt::Key_Up) setSelectedLayer(std::max(0, selectedLayer_ - 1));
  else if (event->key() == Qt::Key_Home) setSelectedLayer(0);
  else if (event->key() == Qt::Key_End) setSelectedLayer(snap_.layers - 1);
  else QWidget::keyPressEvent(event);
}

}  // namespace deltafin::gui
