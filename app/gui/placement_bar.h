#pragma once
// The placement plan (engine/placement, what `deltafin plan` prints) as one bar: the model's
// bytes by where the plan puts them, spine and expert tiers together (VRAM, RAM, streamed from
// disk), with the plan's predicted decode speed beside the speed measured on this machine.
#include <QWidget>

#include <optional>

#include "placement/planner.h"

namespace deltafin::gui {

struct PlacementShares {
  quint64 vram = 0, ram = 0, disk = 0;  // bytes: spine units by home, plus the expert tiers
  double predictedTokensPerSecond = 0;  // decode, from the plan
  QString bound;                        // what bounds decode ("disk", "CPU", ...)
  QString rates;                        // where the plan's rates came from
};

PlacementShares placementShares(const placement::Plan& plan);

// The plan for the model in `root` on this machine (its free RAM; the CPU: the Studio does not
// see the GPUs' free memory), with the rates `deltafin plan` measured and cached beside the model,
// or the assumed desktop's when it never ran. Empty with `why` set when no plan can be made.
std::optional<placement::Plan> planForThisMachine(const QString& root, QString* why);

class PlacementBar : public QWidget {
  Q_OBJECT
 public:
  explicit PlacementBar(QWidget* parent = nullptr);
  void setPlan(const placement::Plan& plan);
  // Plans for `root` (planForThisMachine); a model with no plan shows why.
  void planFor(const QString& root);
  // The decode speed measured here (a reply, a benchmark); 0: none yet.
  void setMeasured(double tokensPerSecond);
  const PlacementShares& shares() const { return shares_; }
  bool hasPlan() const { return hasPlan_; }
  double measured() const { return measured_; }
  // The line under the bar: the bytes per home, predicted and measured speed.
  QString caption() const;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  void update_();
  PlacementShares shares_;
  bool hasPlan_ = false;
  QString why_;
  double measured_ = 0;
};

}  // namespace deltafin::gui
