#pragma once
#include <string>
#include <vector>

namespace deltafin {

struct ProcessResult {
  int code = -1;  // exit status; -1 when it could not start or died by a signal
  std::string out, err;
};

// Runs argv[0] (searched in PATH) with the given working directory, no shell.
// `echo` receives output lines as they come (for long builds); may be empty.
ProcessResult run_command(const std::vector<std::string>& argv, const std::string& cwd = {},
                          void (*echo)(const std::string& line, void* ctx) = nullptr, void* ctx = nullptr);

}  // namespace deltafin
