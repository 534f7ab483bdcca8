#include "cli_common.h"

#include <cstdlib>
#include <sstream>

#include "base/error.h"
#include "base/thread_pool.h"

namespace deltafin::cli {

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" \t[]"), b = item.find_last_not_of(" \t[]");
    if (a == std::string::npos) throw Error("empty entry in --ids '" + text + "'", "write ids like 1,2,3");
    item = item.substr(a, b - a + 1);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (*end != 0 || v < 0 || v > INT32_MAX)
      throw Error("'" + item + "' in --ids is not a token id", "write ids like 1,2,3");
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) throw Error("--ids is empty", "give at least one token id, e.g. --ids 1,2,3");
  return ids;
}

std::string ids_json(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

void apply_threads(int threads) {
  if (threads > 0) ThreadPool::set_global_threads(threads);
}

std::string default_model_root() {
  if (const char* env = std::getenv("DELTAFIN_MODEL_ROOT"); env && *env) return env;
  std::string base;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.local/share";
  else base = ".";
  return base + "/deltafin/models/kimi-k3";
}

void add_device_option(CLI::App* cmd, std::string& device) {
  cmd->add_option("--device", device, "Run the forward on the cpu or on a CUDA GPU")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

StoreOptions StoreFlags::options() const {
  StoreOptions s;
  s.ram_budget = static_cast<uint64_t>(ram_gb * 1e9);
  s.policy = parse_policy(policy);
  s.prefetch = !no_prefetch;
  if (guess_budget == "all") s.guess_bytes_per_layer = INT64_MAX;
  else if (guess_budget != "auto") {
    char* end = nullptr;
    const double mb = std::strtod(guess_budget.c_str(), &end);
    if (end == guess_budget.c_str() || *end || !(mb >= 0))
      throw Error("--guess-budget '" + guess_budget + "' is not auto, all or a number of MB",
                  "write --guess-budget auto (what the disk reads while a layer computes), all, or e.g. 200");
    s.guess_bytes_per_layer = int64_t(mb * 1e6);
  }
  s.direct_io = !page_cache;
  s.use_io_uring = io == "uring";
  s.queue_depth = qd;
  s.lock_memory = !no_lock;
  s.heat_path = heat;
  return s;
}

}  // namespace deltafin::cli
