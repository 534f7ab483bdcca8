#include "install/disk_space.h"

#include <sys/statvfs.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace fs = std::filesystem;

namespace deltafin {

uint64_t free_disk_bytes(const std::string& path) {
  fs::path p = fs::absolute(path);
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs s {};
  if (::statvfs(p.c_str(), &s) != 0)
    throw Error("cannot read free space of " + p.string() + ": " + std::strerror(errno));
  return static_cast<uint64_t>(s.f_bavail) * static_cast<uint64_t>(s.f_frsize);
}

void check_disk_space(const std::string& path, uint64_t needed, uint64_t margin) {
  uint64_t free = free_disk_bytes(path);
  if (needed + margin > free)
    throw Error("not enough disk space in " + path + ": the install needs " + format_bytes_exact(needed) +
                    " more plus a " + format_bytes(margin) + " safety margin, but only " + format_bytes_exact(free) +
                    " are free",
                "free " + format_bytes(needed + margin - free) + ", or choose another --model-root, or use --stream");
}

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string format_bytes_exact(uint64_t bytes) {
  std::string digits = std::to_string(bytes), grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return format_bytes(bytes) + " (" + grouped + " bytes)";
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto s = static_cast<unsigned long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lluh%02llum", s / 3600, (s / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%02llu:%02llu", s / 60, s % 60);
  return buf;
}

uint64_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw Error("'" + text + "' is not a size", "write it like 500G, 1.5T or 64GiB");
  }
  std::string unit = text.substr(used);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB") mult = 1e3;
  else if (unit == "M" || unit == "MB") mult = 1e6;
  else if (unit == "G" || unit == "GB") mult = 1e9;
  else if (unit == "T" || unit == "TB") mult = 1e12;
  else if (unit == "KIB") mult = 1024.0;
  else if (unit == "MIB") mult = 1024.0 * 1024;
  else if (unit == "GIB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "TIB") mult = 1024.0 * 1024 * 1024 * 1024;
  if (mult == 0 || v < 0 || !std::isfinite(v))
    throw Error("'" + text + "' is not a size", "write it like 500G, 1.5T or 64GiB");
  return static_cast<uint64_t>(v * mult);
}

}  // namespace deltafin
