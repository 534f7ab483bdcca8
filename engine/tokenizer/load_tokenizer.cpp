#include <filesystem>

#include "base/error.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/tiktoken_loader.h"
#include "tokenizer/tokenizer.h"

namespace deltafin {

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_root) {
  namespace fs = std::filesystem;
  const fs::path root(model_root);
  std::error_code ec;
  if (fs::exists(root / "tiktoken.model", ec))
    return load_tiktoken_tokenizer((root / "tiktoken.model").string(), (root / "tokenizer_config.json").string());
  if (fs::exists(root / "tokenizer.json", ec)) return load_hf_tokenizer((root / "tokenizer.json").string());
  throw Error("no tokenizer in " + model_root,
              "a model folder needs tiktoken.model + tokenizer_config.json (Kimi K3) or tokenizer.json (Qwen3)");
}

}  // namespace deltafin
