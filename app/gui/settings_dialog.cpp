#include "settings_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

#include "app_paths.h"
#include "deltafin/build_info.h"

namespace deltafin::gui {

QList<QPair<QString, QString>> availableLanguages() {
  return {{QString(), QObject::tr("System language")},
          {QStringLiteral("en"), QStringLiteral("English")},
          {QStringLiteral("de"), QStringLiteral("Deutsch")},
          {QStringLiteral("zh_CN"), QStringLiteral("简体中文")}};
}

SettingsDialog::SettingsDialog(const StudioSettings& s, QWidget* parent) : QDialog(parent), base_(s) {
  setWindowTitle(tr("Settings"));
  auto* layout = new QVBoxLayout(this);

  auto* model = new QGroupBox(tr("Model"), this);
  auto* modelForm = new QFormLayout(model);
  auto* folderRow = new QHBoxLayout;
  folder_ = new QLineEdit(s.modelFolder, model);
  folder_->setPlaceholderText(defaultModelRoot());
  auto* browse = new QPushButton(tr("&Browse…"), model);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Model folder"), folder_->text());
    if (!dir.isEmpty()) folder_->setText(dir);
  });
  folderRow->addWidget(folder_, 1);
  folderRow->addWidget(browse);
  auto* folderLabel = new QLabel(tr("&Model folder:"), model);
  folderLabel->setBuddy(folder_);
  modelForm->addRow(folderLabel, folderRow);
  demo_ = new QCheckBox(tr("Use the bundled demo model while K3 is not installed"), model);
  demo_->setChecked(s.useDemo);
  modelForm->addRow(demo_);
  layout->addWidget(model);

  auto* engine = new QGroupBox(tr("Engine"), this);
  auto* engineForm = new QFormLayout(engine);
  device_ = new QComboBox(engine);
  device_->addItem(tr("Automatic"), QStringLiteral("auto"));
  device_->addItem(tr("CPU"), QStringLiteral("cpu"));
  if (build_info::cuda) device_->addItem(tr("CUDA GPU"), QStringLiteral("cuda"));
  device_->setCurrentIndex(std::max(0, device_->findData(s.device)));
  engineForm->addRow(tr("&Device:"), device_);
  ram_ = new QSpinBox(engine);
  ram_->setRange(0, 4096);
  ram_->setSuffix(tr(" GiB"));
  ram_->setSpecialValueText(tr("Automatic"));
  ram_->setValue(s.ramCacheGiB);
  engineForm->addRow(tr("&RAM expert cache:"), ram_);
  vram_ = new QSpinBox(engine);
  vram_->setRange(0, 1024);
  vram_->setSuffix(tr(" GiB"));
  vram_->setSpecialValueText(tr("Automatic"));
  vram_->setValue(s.vramCacheGiB);
  engineForm->addRow(tr("&VRAM expert cache:"), vram_);
  drafter_ = new QComboBox(engine);
  drafter_->addItem(tr("None"), QStringLiteral("none"));
  drafter_->addItem(tr("DSpark"), QStringLiteral("dspark"));
  drafter_->addItem(tr("Qwen3"), QStringLiteral("qwen"));
  drafter_->setCurrentIndex(std::max(0, drafter_->findData(s.drafter)));
  drafter_->setToolTip(tr("Drafters only guess ahead; K3 checks every token, so answers do not change"));
  engineForm->addRow(tr("D&rafter:"), drafter_);
  maxTokens_ = new QSpinBox(engine);
  maxTokens_->setRange(1, 131072);
  maxTokens_->setValue(s.maxNewTokens);
  engineForm->addRow(tr("Longest &reply (tokens):"), maxTokens_);
  layout->addWidget(engine);

  auto* server = new QGroupBox(tr("Local server"), this);
  auto* serverForm = new QFormLayout(server);
  server_ = new QCheckBox(tr("Run the OpenAI-compatible server (deltafin serve)"), server);
  server_->setChecked(s.serverEnabled);
  serverForm->addRow(server_);
  port_ = new QSpinBox(server);
  port_->setRange(1, 65535);
  port_->setValue(s.serverPort);
  serverForm->addRow(tr("&Port:"), port_);
  layout->addWidget(server);

  auto* remote = new QGroupBox(tr("Remote engine"), this);
  auto* remoteForm = new QFormLayout(remote);
  remote_ = new QCheckBox(tr("Chat with an OpenAI-compatible endpoint instead of this machine"), remote);
  remote_->setChecked(s.remoteEnabled);
  remoteForm->addRow(remote_);
  remoteUrl_ = new QLineEdit(s.remoteUrl, remote);
  remoteForm->addRow(tr("&Address:"), remoteUrl_);
  remoteModel_ = new QLineEdit(s.remoteModel, remote);
  remoteModel_->setPlaceholderText(tr("first model the server lists"));
  remoteForm->addRow(tr("Mo&del:"), remoteModel_);
  remoteKey_ = new QLineEdit(s.remoteApiKey, remote);
  remoteKey_->setEchoMode(QLineEdit::Password);
  remoteForm->addRow(tr("API &key:"), remoteKey_);
  layout->addWidget(remote);

  auto* ui = new QFormLayout;
  language_ = new QComboBox(this);
  for (const auto& [code, name] : availableLanguages()) language_->addItem(name, code);
  language_->setCurrentIndex(std::max(0, language_->findData(s.language)));
  ui->addRow(tr("&Language:"), language_);
  layout->addLayout(ui);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
}

StudioSettings SettingsDialog::result() const {
  StudioSettings s = base_;
  s.modelFolder = folder_->text().trimmed();
  s.useDemo = demo_->isChecked();
  s.device = device_->currentData().toString();
  s.ramCacheGiB = ram_->value();
  s.vramCacheGiB = vram_->value();
  s.drafter = drafter_->currentData().toString();
  s.maxNewTokens = maxTokens_->value();
  s.serverEnabled = server_->isChecked();
  s.serverPort = port_->value();
  s.remoteEnabled = remote_->isChecked();
  s.remoteUrl = remoteUrl_->text().trimmed();
  s.remoteModel = remoteModel_->text().trimmed();
  s.remoteApiKey = remoteKey_->text();
  s.language = language_->currentData().toString();
  return s;
}

}  // namespace deltafin::gui
