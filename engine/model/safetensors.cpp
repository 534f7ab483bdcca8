#include "model/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/mapped_file.h"

namespace deltafin {

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (auto d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

namespace {

[[noreturn]] void bad(const std::string& origin, const std::string& why) {
  throw Error("invalid safetensors file " + origin + ": " + why,
              "the file is damaged or not a safetensors file; re-download it (deltafin setup verifies and repairs)");
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t& out) { return __builtin_mul_overflow(a, b, &out); }

}  // namespace

SafetensorsHeader SafetensorsHeader::parse(const uint8_t* prefix, uint64_t prefix_len, uint64_t file_size,
                                           const std::string& origin) {
  SafetensorsHeader h;
  h.file_size = file_size;
  if (file_size < 8 || prefix_len < 8) bad(origin, "shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
  if (n < 2) bad(origin, "header length " + std::to_string(n) + " is too small");
  if (n > kMaxSafetensorsHeader) bad(origin, "header length " + std::to_string(n) + " exceeds 100 MiB");
  if (n > file_size - 8)
    bad(origin, "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(file_size) +
                    " bytes)");
  if (n > prefix_len - 8) bad(origin, "header not fully read");
  h.header_len = n;
  h.data_start = 8 + n;
  const uint64_t data_len = file_size - h.data_start;

  nlohmann::json j;
  try {
    j = nlohmann::json::parse(reinterpret_cast<const char*>(prefix + 8), reinterpret_cast<const char*>(prefix + 8 + n));
  } catch (const nlohmann::json::exception& e) {
    bad(origin, std::string("header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad(origin, "header is not a JSON object");

  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const auto& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) bad(origin, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) bad(origin, "__metadata__." + m.key() + " is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) bad(origin, "entry '" + key + "' is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) bad(origin, "tensor '" + key + "' has no string dtype");
    if (sh == v.end() || !sh->is_array()) bad(origin, "tensor '" + key + "' has no shape array");
    if (off == v.end() || !off->is_array() || off->size() != 2)
      bad(origin, "tensor '" + key + "' needs data_offsets [begin, end]");
    TensorInfo t;
    t.name = key;
    auto d = parse_dtype(dt->get<std::string>());
    if (!d) bad(origin, "tensor '" + key + "' has unknown dtype '" + dt->get<std::string>() + "'");
    t.dtype = *d;
    uint64_t numel = 1;
    for (const auto& e : *sh) {
      if (!e.is_number_unsigned())
        bad(origin, "tensor '" + key + "' has a shape entry that is not a non-negative integer");
      uint64_t x = e.get<uint64_t>();
      if (x > (1ull << 62) || mul_overflows(numel, x, numel)) bad(origin, "tensor '" + key + "' shape overflows");
      t.shape.push_back(static_cast<int64_t>(x));
    }
    for (const auto& e : *off)
      if (!e.is_number_unsigned())
        bad(origin, "tensor '" + key + "' has a data offset that is not a non-negative integer");
    t.begin = (*off)[0].get<uint64_t>();
    t.end = (*off)[1].get<uint64_t>();
    if (t.begin > t.end) bad(origin, "tensor '" + key + "' has begin > end");
    if (t.end > data_len)
      bad(origin, "tensor '" + key + "' ends at " + std::to_string(t.end) + " past the data region of " +
                      std::to_string(data_len) + " bytes (file truncated?)");
    uint64_t bytes;
    if (mul_overflows(numel, dtype_size(t.dtype), bytes)) bad(origin, "tensor '" + key + "' size overflows");
    if (bytes != t.end - t.begin)
      bad(origin, "tensor '" + key + "' has " + std::to_string(t.end - t.begin) + " bytes but " + dtype_name(t.dtype) +
                      " shape needs " + std::to_string(bytes));
    h.tensors.push_back(std::move(t));
  }

  // Tensors must tile the data region exactly: no overlap, no hole, nothing after.
  std::vector<const TensorInfo*> order;
  order.reserve(h.tensors.size());
  for (const auto& t : h.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](auto* a, auto* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  uint64_t pos = 0;
  for (auto* t : order) {
    if (t->begin < pos) bad(origin, "tensor '" + t->name + "' overlaps the previous tensor");
    if (t->begin > pos)
      bad(origin, "hole of " + std::to_string(t->begin - pos) + " bytes before tensor '" + t->name + "'");
    pos = t->end;
  }
  if (pos != data_len)
    bad(origin, "data region is " + std::to_string(data_len) + " bytes but tensors cover " + std::to_string(pos));
  return h;
}

SafetensorsHeader SafetensorsHeader::read(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error("cannot open " + path + ": " + std::strerror(errno), "check the model folder (deltafin doctor)");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error("cannot stat " + path + ": " + std::strerror(errno));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint8_t len_bytes[8] = {};
  if (size < 8) bad(path, "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  read_exact(fd, len_bytes, 8, 0, path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > kMaxSafetensorsHeader || n > size - 8) return parse(len_bytes, 8, size, path);  // reports the bound
  std::vector<uint8_t> buf(8 + n);
  std::memcpy(buf.data(), len_bytes, 8);
  read_exact(fd, buf.data() + 8, n, 8, path);
  return parse(buf.data(), buf.size(), size, path);
}

const TensorInfo* SafetensorsHeader::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace deltafin
