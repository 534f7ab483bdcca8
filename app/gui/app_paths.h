#pragma once
// Where the app finds things: the bundled demo model, the K3 model folder, the CLI.
#include <QString>

namespace deltafin::gui {

// The demo model next to the executable: <bin>/../demo-model in a build tree,
// <prefix>/share/deltafin/demo-model when installed. Empty when neither exists.
QString bundledDemoModel();
// The same default the CLI uses: $DELTAFIN_MODEL_ROOT, else $XDG_DATA_HOME/deltafin/models/kimi-k3,
// else ~/.local/share/deltafin/models/kimi-k3.
QString defaultModelRoot();
// True when `dir` holds a model the engine can load (config.json present).
bool hasModel(const QString& dir);
// The `deltafin` CLI next to this executable, else the one on PATH.
QString cliExecutable();

}  // namespace deltafin::gui
