#pragma once
#include <string>

namespace deltafin {

// The model root is K3's folder: --model-root when given, else $DELTAFIN_MODEL_ROOT,
// else $XDG_DATA_HOME/deltafin/models/kimi-k3, else ~/.local/share/deltafin/models/kimi-k3.
// K3's own files sit in it as the Hub ships them; add-ons (DSpark, Qwen) in
// <root>/addons/<folder>; deltafin's bookkeeping in <root>/.deltafin.
std::string resolve_model_root(const std::string& flag_value);
std::string state_dir(const std::string& model_root);
// Where a repository of the given role is installed (K3: the root itself).
std::string install_dir(const std::string& model_root, bool is_k3, const std::string& folder);

// Durable file helpers shared by the installer and the stream cache.
void write_file_atomically(const std::string& path, const std::string& contents);
void fsync_dir_of(const std::string& path);
std::string read_text_file(const std::string& path);

}  // namespace deltafin
