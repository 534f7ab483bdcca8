#pragma once
// Which translation is installed: the system's language by default, or the one chosen in
// the Language menu / Settings.
#include <QObject>
#include <QTranslator>

namespace deltafin::gui {

class Language : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  // `code`: "de", "zh_CN", "en", or "" for the system language. Returns the code in effect.
  QString apply(const QString& code);
  QString current() const { return current_; }

 private:
  QTranslator app_;
  QTranslator qt_;
  QString current_;
};

}  // namespace deltafin::gui
