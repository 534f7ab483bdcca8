#include "model/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace deltafin {

void SafetensorsWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape, Fill fill) {
  uint64_t n = dtype_size(dtype);
  for (auto d : shape) n *= static_cast<uint64_t>(d);
  items_.push_back({name, dtype, std::move(shape), n, std::move(fill)});
}

void SafetensorsWriter::add_bytes(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                  std::vector<uint8_t> bytes) {
  auto data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  add(name, dtype, std::move(shape),
      [data](uint8_t* dst, uint64_t n, uint64_t off) { std::memcpy(dst, data->data() + off, n); });
  if (items_.back().bytes != data->size())
    throw Error("tensor " + name + ": " + std::to_string(data->size()) + " bytes given for a shape of " +
                std::to_string(items_.back().bytes));
}

uint64_t SafetensorsWriter::data_bytes() const {
  uint64_t n = 0;
  for (const auto& it : items_) n += it.bytes;
  return n;
}

std::vector<std::string> SafetensorsWriter::names() const {
  std::vector<std::string> v;
  for (const auto& it : items_) v.push_back(it.name);
  return v;
}

uint64_t SafetensorsWriter::write(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  // Header keys are written in insertion order of data: nlohmann::ordered_json keeps it.
  nlohmann::ordered_json h;
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const auto& it : items_) {
    h[it.name] = {{"dtype", dtype_name(it.dtype)}, {"shape", it.shape}, {"data_offsets", {off, off + it.bytes}}};
    off += it.bytes;
  }
  std::string header = h.dump();
  while ((8 + header.size()) % 8 != 0) header.push_back(' ');
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error("cannot create " + tmp + ": " + std::strerror(errno), "check free space and permissions");
  auto fail = [&](const char* what) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw Error(std::string(what) + " " + tmp + ": " + std::strerror(errno), "check free disk space");
  };
  uint8_t len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  if (std::fwrite(len, 1, 8, f) != 8 || std::fwrite(header.data(), 1, header.size(), f) != header.size())
    fail("cannot write");
  std::vector<uint8_t> buf;
  const uint64_t kChunk = 64ull << 20;
  for (const auto& it : items_) {
    for (uint64_t o = 0; o < it.bytes; o += kChunk) {
      const uint64_t m = std::min(kChunk, it.bytes - o);
      buf.resize(m);
      it.fill(buf.data(), m, o);
      if (std::fwrite(buf.data(), 1, m, f) != m) fail("cannot write");
    }
  }
  if (std::fflush(f) != 0) fail("cannot flush");
  std::fclose(f);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  return 8 + header.size() + off;
}

}  // namespace deltafin
