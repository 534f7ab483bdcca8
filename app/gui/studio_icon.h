#pragma once
// The app icon, painted in code (the same drawing as resources/icons/io.github.deltafin.Studio.svg) because Qt
// reads no SVG without the optional svg plugin. Used for the window icon and, at build time,
// for the PNG icons the package installs.
#include <QIcon>
#include <QImage>

namespace deltafin::gui {

QImage paintStudioIcon(int size);
QIcon studioIcon();

}  // namespace deltafin::gui
