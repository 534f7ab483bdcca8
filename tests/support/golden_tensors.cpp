#include "support/golden_tensors.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace deltafin::test {

LoadedTensors load_tensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  LoadedTensors t;
  t.bytes.assign(s.begin(), s.end());
  t.header = SafetensorsHeader::parse(t.bytes.data(), t.bytes.size(), t.bytes.size(), path);
  return t;
}

std::vector<float> LoadedTensors::f32(const std::string& name) const {
  const TensorInfo* ti = header.find(name);
  if (!ti || ti->dtype != DType::F32) throw Error("golden tensor " + name + " missing or not F32");
  std::vector<float> v(ti->numel());
  std::memcpy(v.data(), bytes.data() + header.data_start + ti->begin, ti->nbytes());
  return v;
}

std::vector<int64_t> LoadedTensors::i64(const std::string& name) const {
  const TensorInfo* ti = header.find(name);
  if (!ti) throw Error("golden tensor " + name + " missing");
  std::vector<int64_t> v(ti->numel());
  const uint8_t* p = bytes.data() + header.data_start + ti->begin;
  for (size_t i = 0; i < v.size(); ++i) {
    if (ti->dtype == DType::I64) std::memcpy(&v[i], p + 8 * i, 8);
    else if (ti->dtype == DType::I32) {
      int32_t x;
      std::memcpy(&x, p + 4 * i, 4);
      v[i] = x;
    } else throw Error("golden tensor " + name + " is not an integer tensor");
  }
  return v;
}

std::vector<int64_t> LoadedTensors::shape(const std::string& name) const {
  const TensorInfo* ti = header.find(name);
  if (!ti) throw Error("golden tensor " + name + " missing");
  return ti->shape;
}

}  // namespace deltafin::test
