#include "placement_bar.h"

#include <QFontMetrics>
#include <QLocale>
#include <QPainter>

#include "base/error.h"
#include "formatting.h"
#include "placement/bandwidths.h"
#include "placement/machine_budget.h"
#include "placement/model_byte_map.h"

namespace deltafin::gui {
namespace {

constexpr int kBarHeight = 14;

// The tier map's colours (expert_heat_map.cpp), so a home reads the same in both.
const QColor kVram(0x2e, 0xa0, 0x43), kRam(0x1f, 0x6f, 0xd0), kDisk(0xe0, 0x8a, 0x1e);

}  // namespace

PlacementShares placementShares(const placement::Plan& p) {
  using placement::Home;
  PlacementShares s;
  quint64 expertVram = 0;
  for (uint64_t v : p.experts.vram_bytes) expertVram += v;
  const quint64 allExperts = p.bytes.all_expert_bytes();
  const quint64 expertRam = std::min<quint64>(p.experts.ram_bytes, allExperts - std::min(allExperts, expertVram));
  s.vram = p.spine_in(Home::Vram) + expertVram;
  s.ram = p.spine_in(Home::Ram) + expertRam;
  // Experts in neither tier are read from disk when used.
  s.disk = p.spine_in(Home::Disk) + (allExperts - std::min(allExperts, expertVram + expertRam));
  s.predictedTokensPerSecond = p.decode.seconds_per_token > 0 ? 1.0 / p.decode.seconds_per_token : 0;
  s.bound = QString::fromStdString(p.decode.bound);
  s.rates = QString::fromStdString(p.rates.source);
  return s;
}

std::optional<placement::Plan> planForThisMachine(const QString& root, QString* why) {
  using namespace placement;
  try {
    const std::string r = root.toStdString();
    const ModelByteMap bytes = ModelByteMap::for_model_root(r);
    const MachineBudget budget = this_machine_ram();
    Bandwidths rates;
    if (auto cached = load_cached_bandwidths(r)) {
      rates = *cached;
    } else {
      rates = assumed_desktop();
      rates.source = "assumed: run `deltafin plan` once to measure this machine";
    }
    return make_plan(bytes, budget, rates);
  } catch (const Error& e) {
    if (why) *why = QString::fromStdString(e.what_failed());
  } catch (const std::exception& e) {
    if (why) *why = QString::fromStdString(e.what());
  }
  return std::nullopt;
}

PlacementBar::PlacementBar(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("placementBar"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  update_();
}

void PlacementBar::setPlan(const placement::Plan& plan) {
  shares_ = placementShares(plan);
  hasPlan_ = true;
  why_.clear();
  update_();
}

void PlacementBar::planFor(const QString& root) {
  QString why;
  if (auto p = planForThisMachine(root, &why)) {
    setPlan(*p);
  } else {
    hasPlan_ = false;
    shares_ = {};
    why_ = why;
    update_();
  }
}

void PlacementBar::setMeasured(double tokensPerSecond) {
  measured_ = tokensPerSecond;
  update_();
}

QString PlacementBar::caption() const {
  if (!hasPlan_) return why_.isEmpty() ? tr("No placement plan yet.") : tr("No placement plan: %1").arg(why_);
  const QLocale l;
  QString text = tr("Plan: %1 VRAM · %2 RAM · %3 read from disk — predicted %4 tok/s (%5-bound)")
                     .arg(formatBytes(shares_.vram), formatBytes(shares_.ram), formatBytes(shares_.disk),
                          l.toString(shares_.predictedTokensPerSecond, 'f', 2), shares_.bound);
  text += measured_ > 0 ? tr(", measured %1 tok/s").arg(l.toString(measured_, 'f', 2)) : tr(", not measured yet");
  return text;
}

void PlacementBar::update_() {
  // The whole caption too: a narrow window elides it.
  setToolTip(hasPlan_ ? caption() + QStringLiteral("\n") +
                            tr("Where the placement planner puts the model's bytes on this machine (as `deltafin plan` "
                               "prints it). Rates: %1")
                                .arg(shares_.rates)
                      : caption());
  setAccessibleName(tr("Placement plan"));
  setAccessibleDescription(caption());
  updateGeometry();
  update();
}

QSize PlacementBar::sizeHint() const { return {480, kBarHeight + fontMetrics().height() + 8}; }

QSize PlacementBar::minimumSizeHint() const { return {160, kBarHeight + fontMetrics().height() + 8}; }

void PlacementBar::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QRectF bar(0.5, 0.5, width() - 1.0, kBarHeight);
  p.fillRect(bar, palette().color(QPalette::Base));
  const double total = double(shares_.vram) + double(shares_.ram) + double(shares_.disk);
  if (hasPlan_ && total > 0) {
    double x = bar.left();
    for (const auto& [bytes, colour] :
         {std::pair{shares_.vram, kVram}, std::pair{shares_.ram, kRam}, std::pair{shares_.disk, kDisk}}) {
      const double w = bar.width() * double(bytes) / total;
      p.fillRect(QRectF(x, bar.top(), w, bar.height()), colour);
      x += w;
    }
  }
  p.setPen(palette().color(QPalette::Mid));
  p.drawRect(bar);
  p.setPen(palette().color(QPalette::WindowText));
  const QRect text(0, kBarHeight + 4, width(), fontMetrics().height());
  p.drawText(text, Qt::AlignLeft | Qt::AlignVCenter, fontMetrics().elidedText(caption(), Qt::ElideRight, width()));
}

}  // namespace deltafin::gui
