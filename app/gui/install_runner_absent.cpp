// Linked only into trees without engine/install: every install call says so plainly.
#include "base/error.h"
#include "install_runner.h"

namespace deltafin::gui {
namespace {
[[noreturn]] void absent() {
  throw Error("this build of Deltafin has no installer (engine/install is missing)",
              "build from a tree that includes engine/install, or install with `deltafin setup`");
}
}  // namespace

QList<PinnedRepoView> pinnedRepos() { return {}; }
quint64 freeDiskBytes(const QString&) { return 0; }
InstallPlanView planInstall(const InstallRequest&) { absent(); }
void runInstall(const InstallRequest&, const InstallCallbacks&, const std::atomic<bool>*) { absent(); }

}  // namespace deltafin::gui
