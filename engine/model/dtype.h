#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deltafin {

enum class DType { BF16, F16, F32, F64, U8, I8, I16, I32, I64, U16, U32, U64, BOOL, F8_E4M3, F8_E5M2 };

std::optional<DType> parse_dtype(std::string_view s);
const char* dtype_name(DType d);
uint64_t dtype_size(DType d);

}  // namespace deltafin
