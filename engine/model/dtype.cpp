#include "model/dtype.h"

#include <array>
#include <utility>

namespace deltafin {

namespace {
struct Entry {
  DType d;
  const char* name;
  uint64_t size;
};
constexpr std::array<Entry, 15> kTypes{{{DType::BF16, "BF16", 2},
                                        {DType::F16, "F16", 2},
                                        {DType::F32, "F32", 4},
                                        {DType::F64, "F64", 8},
                                        {DType::U8, "U8", 1},
                                        {DType::I8, "I8", 1},
                                        {DType::I16, "I16", 2},
                                        {DType::I32, "I32", 4},
                                        {DType::I64, "I64", 8},
                                        {DType::U16, "U16", 2},
                                        {DType::U32, "U32", 4},
                                        {DType::U64, "U64", 8},
                                        {DType::BOOL, "BOOL", 1},
                                        {DType::F8_E4M3, "F8_E4M3", 1},
                                        {DType::F8_E5M2, "F8_E5M2", 1}}};
}  // namespace

std::optional<DType> parse_dtype(std::string_view s) {
  for (const auto& e : kTypes)
    if (s == e.name) return e.d;
  return std::nullopt;
}

const char* dtype_name(DType d) {
  for (const auto& e : kTypes)
    if (e.d == d) return e.name;
  return "?";
}

uint64_t dtype_size(DType d) {
  for (const auto& e : kTypes)
    if (e.d == d) return e.size;
  return 0;
}

}  // namespace deltafin
