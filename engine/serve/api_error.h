#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace deltafin::serve {

// A request the server refuses, shaped as OpenAI reports errors:
// {"error": {"message", "type", "param", "code"}} with the HTTP status.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = {}, std::string type = "invalid_request_error",
           std::string code = {})
      : std::runtime_error(message),
        status_(status),
        message_(std::move(message)),
        param_(std::move(param)),
        type_(std::move(type)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& type() const { return type_; }
  const std::string& code() const { return code_; }
  nlohmann::json body() const;

 private:
  int status_;
  std::string message_, param_, type_, code_;
};

// 400 for a field that is present but not accepted.
ApiError bad_field(const std::string& param, const std::string& message);

}  // namespace deltafin::serve
