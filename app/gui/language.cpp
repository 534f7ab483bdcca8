#include "language.h"

#include <QCoreApplication>
#include <QLibraryInfo>
#include <QLocale>

namespace deltafin::gui {

QString Language::apply(const QString& code) {
  QCoreApplication::removeTranslator(&app_);
  QCoreApplication::removeTranslator(&qt_);
  const QLocale locale = code.isEmpty() ? QLocale::system() : QLocale(code);
  QLocale::setDefault(locale);
  current_ = QStringLiteral("en");
  // English is the source language: it needs no file. Others come from :/i18n (qt_add_translations).
  if (app_.load(locale, QStringLiteral("deltafin"), QStringLiteral("_"), QStringLiteral(":/i18n"))) {
    QCoreApplication::installTranslator(&app_);
    current_ = app_.language();
    if (qt_.load(locale, QStringLiteral("qtbase"), QStringLiteral("_"),
                 QLibraryInfo::path(QLibraryInfo::TranslationsPath)))
      QCoreApplication::installTranslator(&qt_);
  }
  return current_;
}

}  // namespace deltafin::gui
