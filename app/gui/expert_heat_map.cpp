#include "expert_heat_map.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace deltafin::gui {

ExpertHeatMap::ExpertHeatMap(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setAccessibleName(tr("Cached experts per layer"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QSize ExpertHeatMap::sizeHint() const { return {640, std::max(120, snap_.layers * 10 + 30)}; }

void ExpertHeatMap::setSnapshot(const CacheSnapshot& s) {
  snap_ = s;
  // Recency as a rank, not a raw tick, so one very old expert does not wash out the rest.
  QVector<quint64> ticks;
  for (quint64 t : s.lastUse)
    if (t) ticks.push_back(t);
  std::sort(ticks.begin(), ticks.end());
  heat_.fill(0, s.lastUse.size());
  for (int i = 0; i < s.lastUse.size(); ++i) {
    if (!s.lastUse[i]) continue;
    const auto pos = std::lower_bound(ticks.begin(), ticks.end(), s.lastUse[i]) - ticks.begin();
    heat_[i] = ticks.size() > 1 ? static_cast<double>(pos) / (ticks.size() - 1) : 1.0;
  }
  if (selectedLayer_ >= s.layers) selectedLayer_ = -1;
  updateGeometry();
  update();
}

void ExpertHeatMap::setSelectedLayer(int layer) {
  if (layer < 0 || layer >= snap_.layers || layer == selectedLayer_) return;
  selectedLayer_ = layer;
  update();
  emit layerSelected(layer);
}

QRectF ExpertHeatMap::grid() const { return QRectF(rect()).adjusted(36, 4, -4, -4); }

void ExpertHeatMap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (!snap_.stream || snap_.layers == 0 || snap_.experts == 0) {
    p.setPen(palette().text().color());
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               snap_.stream ? tr("No expert cache yet") : tr("Every expert is read from local disk (full install)"));
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
    for (int e = 0; e < snap_.experts; ++e) {
      const int i = l * snap_.experts + e;
      QColor c = QColor(0xdd, 0xdd, 0xdd);
      if (snap_.lastUse.value(i)) {
        const double h = heat_.value(i);
        c = QColor::fromHsvF(0.08 - 0.08 * h, 0.55 + 0.45 * h, 0.65 + 0.35 * h);
      }
      p.fillRect(QRectF(g.left() + e * cw, g.top() + l * ch, std::max(1.0, cw - (cw > 3 ? 1 : 0)),
                        std::max(1.0, ch - (ch > 3 ? 1 : 0))),
                 c);
    }
  }
  if (selectedLayer_ >= 0) {
    p.setPen(QPen(palette().highlight().color(), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(g.left(), g.top() + selectedLayer_ * ch, g.width(), ch));
  }
}

void ExpertHeatMap::mousePressEvent(QMouseEvent* event) {
  const QRectF g = grid();
  if (!snap_.stream || snap_.layers == 0 || !g.contains(event->position())) return;
  setSelectedLayer(static_cast<int>((event->position().y() - g.top()) / (g.height() / snap_.layers)));
}

void ExpertHeatMap::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Down) setSelectedLayer(std::min(snap_.layers - 1, selectedLayer_ + 1));
  else if (event->key() == Qt::Key_Up) setSelectedLayer(std::max(0, selectedLayer_ - 1));
  else QWidget::keyPressEvent(event);
}

}  // namespace deltafin::gui
