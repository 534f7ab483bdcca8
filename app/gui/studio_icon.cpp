#include "studio_icon.h"

#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>

namespace deltafin::gui {

QImage paintStudioIcon(int size) {
  QImage img(size, size, QImage::Format_ARGB32_Premultiplied);
  img.fill(Qt::transparent);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  p.scale(size / 256.0, size / 256.0);  // drawn on the SVG's 256 x 256 grid

  QLinearGradient bg(0, 0, 256, 256);
  bg.setColorAt(0, QColor(0x1b, 0x3a, 0x5c));
  bg.setColorAt(1, QColor(0x0d, 0x1b, 0x2a));
  p.setPen(Qt::NoPen);
  p.setBrush(bg);
  p.drawRoundedRect(QRectF(8, 8, 240, 240), 52, 52);

  QLinearGradient fin(0, 256, 256, 0);
  fin.setColorAt(0, QColor(0x2e, 0xc4, 0xb6));
  fin.setColorAt(1, QColor(0x9b, 0xf6, 0xe5));
  QPainterPath delta;
  delta.moveTo(52, 196);
  delta.lineTo(128, 52);
  delta.cubicTo(150, 96, 176, 140, 204, 196);
  delta.closeSubpath();
  p.setBrush(fin);
  p.drawPath(delta);

  QPainterPath inner;
  inner.moveTo(92, 176);
  inner.lineTo(128, 106);
  inner.lineTo(150, 176);
  inner.closeSubpath();
  QColor shade(0x0d, 0x1b, 0x2a);
  shade.setAlphaF(0.55);
  p.setBrush(shade);
  p.drawPath(inner);

  p.setBrush(QColor(0xff, 0xbf, 0x69));
  p.drawEllipse(QPointF(188, 72), 10, 10);
  return img;
}

QIcon studioIcon() {
  QIcon icon;
  for (int s : {16, 24, 32, 48, 64, 128, 256}) icon.addPixmap(QPixmap::fromImage(paintStudioIcon(s)));
  return icon;
}

}  // namespace deltafin::gui
