#pragma once
#include <stdexcept>
#include <string>

namespace deltafin {

// Every failure the engine reports says what failed and what the user can do about it.
class Error : public std::runtime_error {
 public:
  Error(const std::string& what_failed, const std::string& what_to_do = {})
      : std::runtime_error(what_to_do.empty() ? what_failed : what_failed + " (" + what_to_do + ")"),
        what_failed_(what_failed),
        what_to_do_(what_to_do) {}
  const std::string& what_failed() const { return what_failed_; }
  const std::string& what_to_do() const { return what_to_do_; }

 private:
  std::string what_failed_;
  std::string what_to_do_;
};

}  // namespace deltafin
