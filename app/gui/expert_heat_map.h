#pragma once
// The tier map: layers down, experts across, each cell coloured by the tier the expert is in now
// (VRAM, RAM, disk, or not fetched yet for a streaming install) and stronger the more it was used
// (lookup counts where the engine keeps them, else how recently). Clicking a row, or Up/Down,
// selects that layer (for warming); the tooltip names the cell and sums up its layer.
#include <QWidget>

#include "cache_inspector.h"

namespace deltafin::gui {

class ExpertHeatMap : public QWidget {
  Q_OBJECT
 public:
  explicit ExpertHeatMap(QWidget* parent = nullptr);
  void setSnapshot(const CacheSnapshot& snapshot);
  const CacheSnapshot& snapshot() const { return snap_; }
  int selectedLayer() const { return selectedLayer_; }
  void setSelectedLayer(int layer);
  // The fill colour of a tier at full heat, from the palette in use (light or dark).
  QColor tierColor(ExpertTier tier) const;
  // What one cell is drawn with (tests compare it with tierColor()).
  QColor cellColor(int layer, int expert) const;
  double heat(int layer, int expert) const { return heat_.value(layer * snap_.experts + expert); }
  QString describeLayer(int layer) const;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return {200, 80}; }

 signals:
  void layerSelected(int layer);

 protected:
  bool event(QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  QRectF grid() const;
  bool cellAt(QPointF pos, int* layer, int* expert) const;
  CacheSnapshot snap_;
  QVector<double> heat_;  // 0..1 rank of each expert's use count (or recency)
  int selectedLayer_ = -1;
};

// "VRAM", "RAM", "disk", "not fetched", in the current language.
QString tierName(ExpertTier tier);

}  // namespace deltafin::gui
