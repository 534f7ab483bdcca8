#pragma once
// `deltafin-studio --screenshot FILE --view chat|setup|jobs|cache|bench`: brings one view into a
// representative state with real work (a chat reply, a benchmark run), renders it to a PNG and
// returns the exit code.
#include <QString>
#include <QStringList>

namespace deltafin::gui {

class StudioApp;

QStringList screenshotViews();
struct ScreenshotOptions {
  QString view = QStringLiteral("chat");
  QString file;
  QString prompt;  // chat: the message sent
  QString hubUrl;  // setup: plan against this hub; jobs: run a real install from it first
};

int takeScreenshot(StudioApp& app, const ScreenshotOptions& options);

}  // namespace deltafin::gui
