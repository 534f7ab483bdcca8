#pragma once
// Layers down, experts across: grey = not cached, warm colours = cached, brighter = used more
// recently. Clicking a row selects that layer (for warming).
#include <QWidget>

#include "cache_inspector.h"

namespace deltafin::gui {

class ExpertHeatMap : public QWidget {
  Q_OBJECT
 public:
  explicit ExpertHeatMap(QWidget* parent = nullptr);
  void setSnapshot(const CacheSnapshot& snapshot);
  int selectedLayer() const { return selectedLayer_; }
  void setSelectedLayer(int layer);
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return {200, 80}; }

 signals:
  void layerSelected(int layer);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  QRectF grid() const;
  CacheSnapshot snap_;
  QVector<double> heat_;  // 0..1 recency rank of each cached expert
  int selectedLayer_ = -1;
};

}  // namespace deltafin::gui
