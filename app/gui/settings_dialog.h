#pragma once
// Settings: model folder, device, cache budgets, drafter, local server, remote endpoint,
// reply length and language.
#include <QDialog>

#include "studio_settings.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;

namespace deltafin::gui {

class PlacementBar;

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  SettingsDialog(const StudioSettings& settings, QWidget* parent = nullptr);
  StudioSettings result() const;
  // The placement plan of the model in use (filled by the main window, which knows it).
  PlacementBar* placementBar() const { return placement_; }

 private:
  StudioSettings base_;
  QLineEdit* folder_ = nullptr;
  QCheckBox* demo_ = nullptr;
  QComboBox* device_ = nullptr;
  QComboBox* expertReads_ = nullptr;
  QDoubleSpinBox* ram_ = nullptr;
  QCheckBox* directIo_ = nullptr;
  QComboBox* policy_ = nullptr;
  QComboBox* drafter_ = nullptr;
  QCheckBox* server_ = nullptr;
  QSpinBox* port_ = nullptr;
  QCheckBox* remote_ = nullptr;
  QLineEdit* remoteUrl_ = nullptr;
  QLineEdit* remoteModel_ = nullptr;
  QLineEdit* remoteKey_ = nullptr;
  QSpinBox* maxTokens_ = nullptr;
  QComboBox* language_ = nullptr;
  PlacementBar* placement_ = nullptr;
  QCheckBox* enterSends_ = nullptr;
};

// The languages the app ships, as (code, native name); code "" follows the system.
QList<QPair<QString, QString>> availableLanguages();

}  // namespace deltafin::gui
