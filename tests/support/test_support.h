#pragma once
#include <QtTest/QtTest>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/golden_tensors.h"

namespace deltafin::test {

std::string fixtures_dir();  // shared/fixtures
std::string bin_dir();       // built executables
std::string build_dir();
std::string source_dir();
// A fresh empty directory under the system temp dir, removed when the process exits.
std::string temp_dir(const std::string& tag);
// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

// Runs a command, returns exit code; stdout and stderr captured.
struct RunResult {
  int code = -1;
  std::string out, err;
};
RunResult run_process(const std::vector<std::string>& argv, int timeout_ms = 120000);

double rel_l2(const float* a, const float* b, size_t n);
double max_abs_diff(const float* a, const float* b, size_t n);

}  // namespace deltafin::test
