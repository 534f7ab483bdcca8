#include "serve/api_error.h"

namespace deltafin::serve {

nlohmann::json ApiError::body() const {
  nlohmann::json e = {{"message", message_}, {"type", type_}};
  e["param"] = param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_);
  e["code"] = code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_);
  return {{"error", e}};
}

ApiError bad_field(const std::string& param, const std::string& message) {
  return ApiError(400, message, param, "invalid_request_error", "invalid_value");
}

}  // namespace deltafin::serve
