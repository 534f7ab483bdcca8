#include "placement/machine_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace deltafin::placement {

std::string format_gb(uint64_t bytes) {
  char buf[32];
  const double gb = bytes / 1e9;
  if (bytes == 0 || gb >= 1.0) {
    std::snprintf(buf, sizeof buf, "%.1f GB", gb);
    return buf;
  }
  // Below 1 GB (small models, scaled budgets), three significant digits, rounded up: the figure is
  // often a minimum the user is told to give back as --ram-budget / --vram-budget.
  const int decimals = 2 - int(std::floor(std::log10(gb)));
  const double scale = std::pow(10.0, decimals);
  std::snprintf(buf, sizeof buf, "%.*f GB", decimals, std::ceil(gb * scale - 1e-6) / scale);
  return buf;
}

std::string format_gb_at_least(uint64_t bytes) {
  const double gb = bytes / 1e9;
  if (gb < 1.0) return format_gb(bytes);  // already rounded up
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", std::ceil(gb * 10 - 1e-6) / 10);
  return buf;
}

MachineBudget this_machine_ram() {
  MachineBudget m;
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0, avail = 0, total = 0;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") avail = kb * 1024;
    if (key == "MemTotal:") total = kb * 1024;
  }
  const uint64_t margin = std::max<uint64_t>(avail / 10, 2ull << 30);
  m.ram_budget = avail > margin ? avail - margin : 0;
  m.ram_total = total;
  m.ram_source = "free memory";
  return m;
}

std::vector<uint64_t> parse_gb_list(const std::string& text, const std::string& flag) {
  std::vector<uint64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != 0 || !(v > 0) || v > 1e6)
      throw Error(flag + " '" + text + "': '" + item + "' is not a size in GB",
                  "write e.g. " + flag + " 24 or " + flag + " 32,32");
    out.push_back(static_cast<uint64_t>(v * 1e9));
  }
  if (out.empty()) throw Error(flag + " is empty", "write e.g. " + flag + " 24");
  return out;
}

std::vector<int> parse_device_list(const std::string& text, int visible) {
  std::vector<int> out;
  if (text.empty()) {
    for (int d = 0; d < visible; ++d) out.push_back(d);
    return out;
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != 0 || v < 0)
      throw Error("DELTAFIN_CUDA_DEVICES '" + text + "': '" + item + "' is not a device number",
                  "write e.g. DELTAFIN_CUDA_DEVICES=0,1 (or 0,0: two logical GPUs on device 0)");
    if (v >= visible)
      throw Error("DELTAFIN_CUDA_DEVICES '" + text + "' names device " + item + " but " + std::to_string(visible) +
                      " CUDA device(s) are visible",
                  visible ? "use devices 0.." + std::to_string(visible - 1) : "leave DELTAFIN_CUDA_DEVICES unset");
    out.push_back(int(v));
  }
  if (out.empty())
    throw Error("DELTAFIN_CUDA_DEVICES is set but names no device", "write e.g. DELTAFIN_CUDA_DEVICES=0,1");
  return out;
}

void set_ram_budget(MachineBudget& m, double gb) {
  if (!(gb > 0)) throw Error("--ram-budget must be above 0 GB");
  const uint64_t b = static_cast<uint64_t>(gb * 1e9);
  if (m.ram_total && b > m.ram_total)
    throw Error(
        "--ram-budget " + format_gb(b) + " is larger than this machine's memory (" + format_gb(m.ram_total) + ")",
        "give at most " + format_gb(m.ram_total) + ", or --other-machine to plan for a bigger one");
  m.ram_budget = b;
  m.ram_source = "--ram-budget";
}

void set_vram_budgets(MachineBudget& m, const std::vector<uint64_t>& bytes, bool other_machine) {
  if (other_machine) {
    m.gpus.clear();
    for (size_t i = 0; i < bytes.size(); ++i) m.gpus.push_back(GpuBudget{"GPU " + std::to_string(i), bytes[i], 0});
    return;
  }
  if (m.gpus.empty())
    throw Error(
        "--vram-budget was given but this machine has no CUDA GPU that this build can use",
        "leave it out (the plan uses the CPU, RAM and disk), or add --other-machine to plan for a machine with GPUs");
  if (bytes.size() != m.gpus.size())
    throw Error("--vram-budget gives " + std::to_string(bytes.size()) + " figure(s) but this machine has " +
                    std::to_string(m.gpus.size()) + " GPU(s)",
                "give one size in GB per GPU, comma-separated");
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] > m.gpus[i].total)
      throw Error("--vram-budget " + format_gb(bytes[i]) + " for " + m.gpus[i].name + " is larger than its memory (" +
                      format_gb(m.gpus[i].total) + ")",
                  "give at most " + format_gb(m.gpus[i].total));
    m.gpus[i].budget = bytes[i];
  }
}

}  // namespace deltafin::placement
