#include "drafts/speculative_drafters.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "drafts/dspark_proposer.h"
#include "drafts/ngram_proposer.h"
#include "drafts/qwen3_proposer.h"
#include "tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace deltafin {

namespace {
// Free memory kept for the target's caches and the OS beyond a drafter's weights.
constexpr uint64_t kMemoryMargin = 1ull << 30;

uint64_t folder_weight_bytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") n += e.file_size(ec);
  return n;
}

bool looks_like_model(const std::string& dir) {
  return fs::exists(dir + "/config.json") &&
         (fs::exists(dir + "/model.safetensors") || fs::exists(dir + "/model.safetensors.index.json"));
}
}  // namespace

DraftChoice parse_draft_choice(const std::string& s) {
  if (s == "auto") return DraftChoice::Auto;
  if (s == "off") return DraftChoice::Off;
  if (s == "dspark") return DraftChoice::DSpark;
  if (s == "qwen") return DraftChoice::Qwen;
  if (s == "ngram") return DraftChoice::Ngram;
  throw Error("unknown drafter '" + s + "'", "use --draft auto, off, dspark, qwen or ngram");
}

const char* draft_choice_name(DraftChoice c) {
  switch (c) {
    case DraftChoice::Auto:
      return "auto";
    case DraftChoice::Off:
      return "off";
    case DraftChoice::DSpark:
      return "dspark";
    case DraftChoice::Qwen:
      return "qwen";
    case DraftChoice::Ngram:
      return "ngram";
  }
  return "?";
}

std::vector<std::string> draft_search_paths(DraftChoice c, const std::string& k3_root) {
  const std::string parent = fs::path(k3_root).lexically_normal().parent_path().string();
  // First where `deltafin setup` installs add-ons (<root>/addons/<folder>, install/model_root.h).
  // Last, the bundled demo's drafter beside the demo model (<build>/demo-dspark, share/deltafin/demo-dspark):
  // a DSpark made for another target is refused when it loads, so a K3 never drafts with it.
  if (c == DraftChoice::DSpark)
    return {k3_root + "/addons/kimi-k3-dspark", k3_root + "/dspark", parent + "/kimi-k3-dspark",
            parent + "/demo-dspark"};
  if (c == DraftChoice::Qwen)
    return {k3_root + "/addons/qwen3-1.7b-base", k3_root + "/addons/qwen3-0.6b-base", parent + "/qwen3-1.7b-base",
            parent + "/qwen3-0.6b-base", k3_root + "/qwen3"};
  return {};
}

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

struct DraftSetup::Loaded {
  const K3Model* target = nullptr;
  DraftChoice kind = DraftChoice::Off;
  std::unique_ptr<DSparkModel> dspark;
  std::unique_ptr<Qwen3Model> qwen;
  std::unique_ptr<Qwen3Backend> qwen_backend;  // after qwen: it may read the host weights
  std::unique_ptr<Tokenizer> k3_tok, qwen_tok;
};

DraftSetup::~DraftSetup() = default;

std::unique_ptr<DraftProposer> DraftSetup::make_proposer() const {
  if (!loaded_) return nullptr;
  switch (loaded_->kind) {
    case DraftChoice::DSpark:
      return std::make_unique<DSparkProposer>(*loaded_->dspark);
    case DraftChoice::Qwen:
      return std::make_unique<Qwen3Proposer>(*loaded_->qwen_backend, *loaded_->k3_tok, *loaded_->qwen_tok);
    case DraftChoice::Ngram:
      return std::make_unique<NgramProposer>();
    default:
      return nullptr;
  }
}

std::unique_ptr<DraftSetup> DraftSetup::create(const K3Model& target, const DraftSetupOptions& opts) {
  auto ds = std::unique_ptr<DraftSetup>(new DraftSetup());
  if (opts.choice == DraftChoice::Off) return ds;
  std::vector<DraftChoice> order;
  if (opts.choice == DraftChoice::Auto) {
    if (opts.chat) order = {DraftChoice::DSpark, DraftChoice::Ngram};
    else order = {DraftChoice::Qwen, DraftChoice::DSpark, DraftChoice::Ngram};
  } else {
    order = {opts.choice};
  }
  std::string why;
  for (DraftChoice c : order) {
    auto L = std::make_unique<Loaded>();
    L->target = &target;
    L->kind = c;
    try {
      if (c != DraftChoice::Ngram) {
        std::string root;
        // An explicit folder is tried for each candidate kind (auto) or the chosen one.
        if (!opts.draft_root.empty()) root = opts.draft_root;
        for (const auto& p : draft_search_paths(c, target.root()))
          if (root.empty() && looks_like_model(p)) root = p;
        if (root.empty() || !looks_like_model(root)) {
          why += std::string(why.empty() ? "" : "; ") + draft_choice_name(c) + ": no draft model found" +
                 (root.empty() ? "" : " in " + root);
          continue;
        }
        const uint64_t need = folder_weight_bytes(root), avail = available_memory_bytes();
        if (avail != 0 && need + kMemoryMargin > avail) {
          why += std::string(why.empty() ? "" : "; ") + draft_choice_name(c) + ": too little free memory (" +
                 std::to_string(need >> 20) + " MiB of weights, " + std::to_string(avail >> 20) + " MiB available)";
          continue;
        }
        if (c == DraftChoice::DSpark) {
          L->dspark = DSparkModel::load(root, target);
        } else {
          L->qwen = Qwen3Model::load(root);
          L->k3_tok = load_tokenizer(target.root());
          L->qwen_tok = load_tokenizer(root);
        }
        ds->note_ = std::string(draft_choice_name(c)) + " from " + root;
        if (c == DraftChoice::Qwen) {
          std::string device;
          L->qwen_backend = make_qwen3_backend(*L->qwen, opts.qwen_device, &device);
          ds->note_ += " on " + device;
        }
      } else {
        ds->note_ = "ngram";
      }
      ds->loaded_ = std::move(L);
      ds->proposer_ = ds->make_proposer();
      if (!why.empty()) ds->note_ += " (" + why + ")";
      return ds;
    } catch (const std::exception& e) {
      why += std::string(why.empty() ? "" : "; ") + draft_choice_name(c) + ": " + e.what();
    }
  }
  ds->note_ = "plain decoding: " + why;
  return ds;
}

}  // namespace deltafin
