#include "settings_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
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

#include <QStandardItemModel>

#include "app_paths.h"
#include "device_choice.h"
#include "placement_bar.h"

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
  // Wrapped notes go below the form: a form row does not grow with a label's wrapped height.
  auto* engineBox = new QVBoxLayout(engine);
  auto* engineForm = new QFormLayout;
  engineBox->addLayout(engineForm);
  device_ = new QComboBox(engine);
  device_->setObjectName(QStringLiteral("deviceCombo"));
  device_->addItem(tr("Automatic"), QStringLiteral("auto"));
  device_->addItem(tr("CPU"), QStringLiteral("cpu"));
  QString noGpu;
  const bool gpu = cudaDeviceUsable(&noGpu);
  device_->addItem(tr("CUDA GPU"), QStringLiteral("cuda"));
  if (!gpu) {
    // Listed but not selectable, with the reason, so nobody wonders where the GPU went.
    auto* items = qobject_cast<QStandardItemModel*>(device_->model());
    if (QStandardItem* item = items ? items->item(device_->count() - 1) : nullptr) {
      item->setEnabled(false);
      item->setToolTip(noGpu);
    }
  }
  device_->setCurrentIndex(std::max(0, device_->findData(s.device)));
  engineForm->addRow(tr("&Device:"), device_);
  auto* deviceNote = new QLabel(resolveDevice(QStringLiteral("auto")).reason, engine);
  deviceNote->setObjectName(QStringLiteral("deviceNote"));
  deviceNote->setWordWrap(true);
  engineForm->addRow(QString(), deviceNote);

  expertReads_ = new QComboBox(engine);
  expertReads_->setObjectName(QStringLiteral("expertReads"));
  expertReads_->addItem(tr("Through the page cache (memory-mapped shards)"), false);
  expertReads_->addItem(tr("Engine RAM cache over direct disk reads"), true);
  expertReads_->setCurrentIndex(s.ramCache ? 1 : 0);
  engineForm->addRow(tr("&Expert reads:"), expertReads_);
  ram_ = new QDoubleSpinBox(engine);
  ram_->setObjectName(QStringLiteral("ramBudget"));
  ram_->setDecimals(3);  // 1 MiB steps: small models have KiB-sized experts
  ram_->setRange(0, 4096);
  ram_->setSingleStep(1);
  ram_->setSuffix(tr(" GiB"));
  ram_->setSpecialValueText(tr("Automatic (free memory less a margin)"));
  ram_->setValue(s.ramCacheMiB / 1024.0);
  engineForm->addRow(tr("&RAM expert cache:"), ram_);
  directIo_ = new QCheckBox(tr("Bypass the page cache (O_DIRECT), so experts are not held twice"), engine);
  directIo_->setObjectName(QStringLiteral("directIo"));
  directIo_->setChecked(s.directIo);
  engineForm->addRow(QString(), directIo_);
  policy_ = new QComboBox(engine);
  policy_->setObjectName(QStringLiteral("cachePolicy"));
  policy_->addItem(tr("Frequency with decay (LFU)"), QStringLiteral("lfu"));
  policy_->addItem(tr("Least recently used (LRU)"), QStringLiteral("lru"));
  policy_->addItem(tr("Frequency seeded from the saved heat map"), QStringLiteral("heat"));
  policy_->setCurrentIndex(std::max(0, policy_->findData(s.cachePolicy)));
  engineForm->addRow(tr("E&viction:"), policy_);
  auto cacheEnabled = [this] {
    const bool on = expertReads_->currentData().toBool();
    ram_->setEnabled(on);
    directIo_->setEnabled(on);
    policy_->setEnabled(on);
  };
  connect(expertReads_, &QComboBox::currentIndexChanged, this, cacheEnabled);
  cacheEnabled();
  // How the tiers apply, on the controls that choose them (the dialog must fit a 1280x720 screen).
  const QString streamNote =
      tr("Streaming installs keep experts in their own capped stream cache (see the Cache "
         "page); the RAM cache applies to full installs. On the GPU the experts also live "
         "in a VRAM tier sized from the GPU's free memory (all of them when they fit).");
  for (QWidget* w : {static_cast<QWidget*>(expertReads_), static_cast<QWidget*>(ram_)})
    w->setToolTip(w->toolTip().isEmpty() ? streamNote : w->toolTip() + QStringLiteral("\n") + streamNote);

  drafter_ = new QComboBox(engine);
  drafter_->setObjectName(QStringLiteral("drafterCombo"));
  drafter_->addItem(tr("Automatic (DSpark if installed, else n-gram)"), QStringLiteral("auto"));
  drafter_->addItem(tr("Off (plain decoding)"), QStringLiteral("off"));
  drafter_->addItem(tr("DSpark"), QStringLiteral("dspark"));
  drafter_->addItem(tr("Qwen3"), QStringLiteral("qwen"));
  drafter_->addItem(tr("n-gram (no model)"), QStringLiteral("ngram"));
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
  server_->setObjectName(QStringLiteral("serverEnabled"));
  server_->setChecked(s.serverEnabled);
  serverForm->addRow(server_);
  port_ = new QSpinBox(server);
  port_->setObjectName(QStringLiteral("serverPort"));
  port_->setRange(0, 65535);
  port_->setSpecialValueText(tr("any free port"));
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
  if (!s.remoteApiKey.isEmpty() && !s.remoteApiKeyWhere.isEmpty())
    remoteForm->addRow(
        QString(), new QLabel(tr("The key is kept in %1, not in the settings file.").arg(s.remoteApiKeyWhere), remote));
  layout->addWidget(remote);

  auto* ui = new QFormLayout;
  language_ = new QComboBox(this);
  for (const auto& [code, name] : availableLanguages()) language_->addItem(name, code);
  language_->setCurrentIndex(std::max(0, language_->findData(s.language)));
  ui->addRow(tr("&Language:"), language_);
  enterSends_ = new QCheckBox(tr("Enter sends a message, Shift+Enter starts a new line (off: Ctrl+Enter sends)"), this);
  enterSends_->setObjectName(QStringLiteral("enterSends"));
  enterSends_->setChecked(s.enterSends);
  ui->addRow(enterSends_);
  layout->addLayout(ui);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  // The plan beside the buttons, where the row has room (the dialog must fit a 1280x720 screen).
  auto* bottom = new QHBoxLayout;
  placement_ = new PlacementBar(this);
  bottom->addWidget(placement_, 1);
  bottom->addWidget(buttons);
  layout->addLayout(bottom);
}

StudioSettings SettingsDialog::result() const {
  StudioSettings s = base_;
  s.modelFolder = folder_->text().trimmed();
  s.useDemo = demo_->isChecked();
  s.device = device_->currentData().toString();
  s.ramCache = expertReads_->currentData().toBool();
  s.ramCacheMiB = static_cast<int>(ram_->value() * 1024.0 + 0.5);
  s.directIo = directIo_->isChecked();
  s.cachePolicy = policy_->currentData().toString();
  s.drafter = drafter_->currentData().toString();
  s.maxNewTokens = maxTokens_->value();
  s.serverEnabled = server_->isChecked();
  s.serverPort = port_->value();
  s.remoteEnabled = remote_->isChecked();
  s.remoteUrl = remoteUrl_->text().trimmed();
  s.remoteModel = remoteModel_->text().trimmed();
  s.remoteApiKey = remoteKey_->text();
  s.language = language_->currentData().toString();
  s.enterSends = enterSends_->isChecked();
  return s;
}

}  // namespace deltafin::gui
