#include "bench_view.h"

#include <QAbstractAxis>
#include <QAbstractBarSeries>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QTreeWidget>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>

#include "formatting.h"
#include "local_engine.h"
#include "placement_bar.h"

namespace deltafin::gui {
namespace {
constexpr int kChartedRuns = 12;  // the newest results in the charts; the table keeps all

QChartView* makeChartView(const QString& title, QWidget* parent) {
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumHeight(220);
  // The table below has the same numbers in text; the chart is named for screen readers.
  view->setAccessibleName(title);
  view->viewport()->setAccessibleName(title);
  return view;
}
}  // namespace

QList<BenchArm> BenchView::defaultArms() {
  return {{QStringLiteral("chat"), 64, 32, 3},
          {QStringLiteral("long-prompt"), 512, 16, 3},
          {QStringLiteral("long-answer"), 16, 128, 3}};
}

BenchView::BenchView(LocalEngine* engine, QString historyPath, QWidget* parent)
    : QWidget(parent), engine_(engine), historyPath_(std::move(historyPath)) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  arms_ = new QTreeWidget(this);
  arms_->setAccessibleName(tr("Benchmark arms"));
  arms_->setObjectName(QStringLiteral("benchArms"));
  arms_->setRootIsDecorated(false);
  arms_->setHeaderLabels({tr("Arm"), tr("Prompt tokens"), tr("New tokens")});
  arms_->setMaximumHeight(110);
  for (const BenchArm& a : defaultArms()) {
    auto* item = new QTreeWidgetItem(arms_, {a.name, QString::number(a.promptTokens), QString::number(a.newTokens)});
    item->setCheckState(0, a.name == QLatin1String("chat") ? Qt::Checked : Qt::Unchecked);
    item->setFlags(item->flags() | Qt::ItemIsEditable);
  }
  top->addWidget(arms_, 1);
  auto* controls = new QVBoxLayout;
  auto* repeatRow = new QHBoxLayout;
  auto* repeatLabel = new QLabel(tr("&Runs per arm:"), this);
  repeats_ = new QSpinBox(this);
  repeats_->setRange(1, 50);
  repeats_->setValue(3);
  repeatLabel->setBuddy(repeats_);
  repeatRow->addWidget(repeatLabel);
  repeatRow->addWidget(repeats_);
  controls->addLayout(repeatRow);
  run_ = new QPushButton(tr("&Run benchmark"), this);
  run_->setObjectName(QStringLiteral("runBench"));
  stop_ = new QPushButton(tr("S&top"), this);
  export_ = new QPushButton(tr("&Export JSON…"), this);
  clear_ = new QPushButton(tr("C&lear history"), this);
  controls->addWidget(run_);
  controls->addWidget(stop_);
  controls->addWidget(export_);
  controls->addWidget(clear_);
  controls->addStretch(1);
  top->addLayout(controls);
  layout->addLayout(top);
  status_ = new QLabel(tr("Each arm prefills a prompt and decodes greedily on a fresh session; the median run "
                          "is kept. Close other programs for steady numbers."),
                       this);
  status_->setObjectName(QStringLiteral("benchStatus"));
  status_->setWordWrap(true);
  layout->addWidget(status_);
  placement_ = new PlacementBar(this);
  layout->addWidget(placement_);
  connect(engine_, &ChatBackend::ready, placement_,
          [this](const BackendInfo& info) { placement_->planFor(info.modelRoot); });
  if (engine_->isReady()) placement_->planFor(engine_->info().modelRoot);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  auto* charts = new QWidget(splitter);
  auto* chartRow = new QHBoxLayout(charts);
  chartRow->setContentsMargins(0, 0, 0, 0);
  speedChart_ = makeChartView(tr("Tokens per second"), charts);
  hitChart_ = makeChartView(tr("Where experts came from"), charts);
  chartRow->addWidget(speedChart_);
  chartRow->addWidget(hitChart_);
  splitter->addWidget(charts);
  table_ = new QTreeWidget(splitter);
  table_->setAccessibleName(tr("Benchmark history"));
  table_->setObjectName(QStringLiteral("benchHistory"));
  table_->setRootIsDecorated(false);
  table_->setHeaderLabels({tr("When"), tr("Arm"), tr("Model"), tr("Prefill tok/s"), tr("Decode tok/s"),
                           tr("First token"), tr("RAM hits"), tr("Disk reads"), tr("Network")});
  splitter->addWidget(table_);
  layout->addWidget(splitter, 1);

  connect(run_, &QPushButton::clicked, this, [this] { runArms(checkedArms()); });
  connect(stop_, &QPushButton::clicked, this, [this] {
    queue_.clear();
    engine_->stop();
  });
  connect(export_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export benchmark history"),
                                     QDir::homePath() + QStringLiteral("/deltafin-bench.json"), tr("JSON (*.json)"));
    if (path.isEmpty()) return;
    QString error;
    status_->setText(exportJson(path, &error) ? tr("Exported %1 results to %2").arg(history_.size()).arg(path) : error);
  });
  connect(clear_, &QPushButton::clicked, this, [this] {
    history_.clear();
    saveHistory();
    refresh();
  });
  connect(engine_, &LocalEngine::benchProgress, this, [this](const QString& arm, int run, int runs) {
    status_->setText(tr("Running %1: run %2 of %3…").arg(arm).arg(run).arg(runs));
  });
  connect(engine_, &LocalEngine::benchResult, this, [this](const BenchResult& r) {
    if (!running_) return;
    running_ = false;
    addResult(r);
    placement_->setMeasured(r.decodeTokensPerSecond);
    status_->setText(tr("%1: prefill %2 tok/s, decode %3 tok/s")
                         .arg(r.arm, QLocale().toString(r.prefillTokensPerSecond, 'f', 1),
                              QLocale().toString(r.decodeTokensPerSecond, 'f', 1)));
    next();
  });
  connect(engine_, &LocalEngine::benchFailed, this,
          [this](const QString& arm, const QString& what, const QString& todo) {
            if (!running_) return;
            running_ = false;
            queue_.clear();
            status_->setText(tr("%1 failed: %2 %3").arg(arm, what, todo));
            next();
          });
  connect(engine_, &ChatBackend::ready, this, &BenchView::refresh);
  connect(engine_, &LocalEngine::busyChanged, this, &BenchView::refresh);
  loadHistory();
  refresh();
}

QList<BenchArm> BenchView::checkedArms() const {
  QList<BenchArm> out;
  for (int i = 0; i < arms_->topLevelItemCount(); ++i) {
    const QTreeWidgetItem* it = arms_->topLevelItem(i);
    if (it->checkState(0) != Qt::Checked) continue;
    out.push_back({it->text(0), std::max(1, it->text(1).toInt()), std::max(1, it->text(2).toInt()), repeats_->value()});
  }
  return out;
}

void BenchView::runArms(const QList<BenchArm>& arms) {
  if (isRunning() || arms.isEmpty()) return;
  queue_ = arms;
  next();
}

void BenchView::next() {
  if (queue_.isEmpty()) {
    refresh();
    emit runFinished();
    return;
  }
  if (!engine_->isReady()) {
    queue_.clear();
    status_->setText(tr("No model is loaded."));
    refresh();
    emit runFinished();
    return;
  }
  running_ = true;
  engine_->runBench(queue_.takeFirst());
  refresh();
}

void BenchView::addResult(const BenchResult& r) {
  history_.push_back(r);
  saveHistory();
  refresh();
}

void BenchView::refresh() {
  const bool busy = isRunning();
  run_->setEnabled(!busy && engine_->isReady() && !engine_->isBusy());
  stop_->setEnabled(busy);
  export_->setEnabled(!history_.isEmpty());
  clear_->setEnabled(!busy && !history_.isEmpty());

  table_->clear();
  for (const BenchResult& r : history_) {
    new QTreeWidgetItem(
        table_,
        {QLocale().toString(r.when, QLocale::ShortFormat), r.arm, r.model,
         QLocale().toString(r.prefillTokensPerSecond, 'f', 1), QLocale().toString(r.decodeTokensPerSecond, 'f', 1),
         tr("%1 s").arg(QLocale().toString(r.firstTokenSeconds, 'f', 2)), formatPercent(r.ramHitRate),
         formatPercent(r.diskReadRate), formatPercent(r.netFetchRate)});
  }

  const int first = std::max(0, static_cast<int>(history_.size()) - kChartedRuns);
  QStringList categories;
  auto* prefill = new QBarSet(tr("Prefill"));
  auto* decode = new QBarSet(tr("Decode"));
  auto* ram = new QBarSet(tr("RAM"));
  auto* disk = new QBarSet(tr("Disk"));
  auto* net = new QBarSet(tr("Network"));
  double top = 1;
  for (int i = first; i < history_.size(); ++i) {
    const BenchResult& r = history_[i];
    categories << QStringLiteral("%1 #%2").arg(r.arm).arg(i + 1);
    *prefill << r.prefillTokensPerSecond;
    *decode << r.decodeTokensPerSecond;
    *ram << r.ramHitRate * 100;
    *disk << r.diskReadRate * 100;
    *net << r.netFetchRate * 100;
    top = std::max({top, r.prefillTokensPerSecond, r.decodeTokensPerSecond});
  }
  auto fill = [&](QChartView* view, QAbstractBarSeries* series, double max, const QString& unit) {
    QChart* chart = view->chart();
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) chart->removeAxis(a);
    chart->addSeries(series);
    auto* x = new QBarCategoryAxis;
    x->append(categories.isEmpty() ? QStringList{tr("no runs yet")} : categories);
    auto* y = new QValueAxis;
    y->setRange(0, max);
    y->setTitleText(unit);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
  };
  auto* speed = new QBarSeries;
  speed->append(prefill);
  speed->append(decode);
  fill(speedChart_, speed, top * 1.1, tr("tok/s"));
  auto* hits = new QStackedBarSeries;
  hits->append(ram);
  hits->append(disk);
  hits->append(net);
  fill(hitChart_, hits, 100, tr("% of expert lookups"));
}

void BenchView::loadHistory() {
  QFile f(historyPath_);
  if (!f.open(QIODevice::ReadOnly)) return;
  for (const QJsonValue& v : QJsonDocument::fromJson(f.readAll()).object().value("results").toArray())
    history_.push_back(BenchResult::fromJson(v.toObject()));
}

void BenchView::saveHistory() const {
  QString ignored;
  QDir().mkpath(QFileInfo(historyPath_).absolutePath());
  exportJson(historyPath_, &ignored);
}

bool BenchView::exportJson(const QString& path, QString* error) const {
  QJsonArray list;
  for (const BenchResult& r : history_) list.push_back(r.toJson());
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) {
    if (error) *error = tr("Cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  f.write(QJsonDocument(QJsonObject{{"version", 1}, {"results", list}}).toJson(QJsonDocument::Indented));
  if (!f.commit()) {
    if (error) *error = tr("Cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace deltafin::gui
