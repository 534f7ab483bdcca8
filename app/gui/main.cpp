// deltafin-studio: the desktop app.
#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QIcon>
#include <QPalette>
#include <QTemporaryDir>
#include <QTextStream>

#include "screenshot.h"
#include "studio_icon.h"
#include "studio_app.h"

int main(int argc, char** argv) {
  // --screenshot renders without a display unless one was asked for.
  for (int i = 1; i < argc; ++i) {
    if (qstrcmp(argv[i], "--screenshot") == 0 && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") &&
        qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
      qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("deltafin"));
  QApplication::setApplicationName(QStringLiteral("deltafin-studio"));
  QApplication::setApplicationDisplayName(QStringLiteral("Deltafin Studio"));
  QApplication::setApplicationVersion(QStringLiteral(DELTAFIN_VERSION));
  QApplication::setDesktopFileName(QStringLiteral("io.github.deltafin.Studio"));
  QApplication::setWindowIcon(deltafin::gui::studioIcon());
  QFile style(QStringLiteral(":/styles/studio.qss"));
  if (style.open(QIODevice::ReadOnly)) {
    QString sheet = QString::fromUtf8(style.readAll());
    // Everything else takes the system's palette (light or dark); the one fixed colour, for
    // errors, is lighter on a dark window so it stays readable.
    if (QApplication::palette().color(QPalette::Window).lightness() < 128)
      sheet += QStringLiteral("\nQLabel#messageError, QLabel#jobError { color: #ff8a80; }\n");
    app.setStyleSheet(sheet);
  }

  QCommandLineParser cli;
  cli.setApplicationDescription(QStringLiteral("Chat with the full Kimi K3 on this machine."));
  cli.addHelpOption();
  cli.addVersionOption();
  const QCommandLineOption modelRoot(QStringLiteral("model-root"), QStringLiteral("Model folder to load."),
                                     QStringLiteral("DIR"));
  const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                      QStringLiteral("Render a view to a PNG file and exit."), QStringLiteral("FILE"));
  const QCommandLineOption view(QStringLiteral("view"),
                                QStringLiteral("View for --screenshot: chat, setup, jobs, cache, bench, settings."),
                                QStringLiteral("VIEW"), QStringLiteral("chat"));
  const QCommandLineOption dataDir(QStringLiteral("data-dir"),
                                   QStringLiteral("Keep conversations, jobs and settings here (default: the user's; "
                                                  "a fresh temporary folder with --screenshot)."),
                                   QStringLiteral("DIR"));
  const QCommandLineOption language(QStringLiteral("language"),
                                    QStringLiteral("Language for this run (de, zh_CN, en)."), QStringLiteral("CODE"));
  const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("Message sent for --view chat."),
                                  QStringLiteral("TEXT"),
                                  QStringLiteral("Explain in two sentences why the sky is blue."));
  const QCommandLineOption hubUrl(QStringLiteral("hub-url"),
                                  QStringLiteral("For --view setup: plan against this hub; for --view jobs: run a real "
                                                 "install from it first."),
                                  QStringLiteral("URL"));
  cli.addOptions({modelRoot, screenshot, view, dataDir, language, prompt, hubUrl});
  cli.process(app);

  deltafin::gui::Studio::Options options;
  options.modelRoot = cli.value(modelRoot);
  options.dataDir = cli.value(dataDir);
  QTemporaryDir scratch;
  if (cli.isSet(screenshot) && options.dataDir.isEmpty()) {
    // A screenshot must neither read nor change the user's conversations and settings.
    if (!scratch.isValid()) {
      QTextStream(stderr) << "deltafin-studio: cannot create a temporary folder\n";
      return 1;
    }
    options.dataDir = scratch.path();
  }

  deltafin::gui::StudioApp studio(options);
  if (cli.isSet(language)) studio.language()->apply(cli.value(language));
  if (cli.isSet(screenshot)) {
    if (!deltafin::gui::screenshotViews().contains(cli.value(view))) {
      QTextStream(stderr) << "deltafin-studio: unknown view '" << cli.value(view) << "' (choose "
                          << deltafin::gui::screenshotViews().join(QStringLiteral(", ")) << ")\n";
      return 2;
    }
    deltafin::gui::ScreenshotOptions shot;
    shot.view = cli.value(view);
    shot.file = cli.value(screenshot);
    shot.prompt = cli.value(prompt);
    shot.hubUrl = cli.value(hubUrl);
    return deltafin::gui::takeScreenshot(studio, shot);
  }
  studio.start();
  return app.exec();
}
