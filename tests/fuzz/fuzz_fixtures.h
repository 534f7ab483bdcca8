// Where the fuzz targets find the golden fixtures: $DELTAFIN_FIXTURES_DIR, else tests/fixtures in
// this source tree (a copy of shared/fixtures, so a clone fuzzes itself).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace deltafin::fuzz {

inline std::string fixtures_dir() {
  if (const char* env = std::getenv("DELTAFIN_FIXTURES_DIR"); env && *env) return env;
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures").string();
}

}  // namespace deltafin::fuzz
