// Strict safetensors header parsing: good files load, every malformed one is an Error.
#include <cstring>
#include <random>

#include "base/error.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "support/test_support.h"

using namespace deltafin;

namespace {

std::vector<uint8_t> make_file(const std::string& header, uint64_t data_bytes) {
  std::vector<uint8_t> f(8 + header.size() + data_bytes, 0);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f[i] = uint8_t(n >> (8 * i));
  std::memcpy(f.data() + 8, header.data(), header.size());
  return f;
}

void expect_error(const std::vector<uint8_t>& f, const char* needle, uint64_t file_size = 0) {
  try {
    SafetensorsHeader::parse(f.data(), f.size(), file_size ? file_size : f.size(), "case");
    QFAIL(qPrintable(QString("accepted a bad file, expected error containing: ") + needle));
  } catch (const Error& e) {
    QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT
 private slots:
  void parsesFixtureShards() {
    const std::string dir = test::fixtures_dir() + "/k3-tiny/";
    auto h = SafetensorsHeader::read(dir + "model-00001-of-000003.safetensors");
    QVERIFY(h.tensors.size() > 100);
    const TensorInfo* t = h.find("language_model.model.layers.0.self_attn.A_log");
    QVERIFY(t);
    QCOMPARE(t->dtype, DType::F32);
    QCOMPARE(t->shape, std::vector<int64_t>({16}));
    QCOMPARE(h.metadata.at("format"), std::string("pt"));
  }

  void parsesMinimal() {
    auto f = make_file(
        R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}})",
        16);
    auto h = SafetensorsHeader::parse(f.data(), f.size(), f.size(), "t");
    QCOMPARE(h.tensors.size(), size_t(2));
    QCOMPARE(h.find("b")->begin, uint64_t(12));
    QCOMPARE(h.data_start, uint64_t(8 + f.size() - 16 - 8));
  }

  void rejectsMalformed() {
    expect_error({1, 2, 3}, "shorter than");
    expect_error(make_file("{", 0), "too small");
    std::vector<uint8_t> huge(8, 0xff);
    expect_error(huge, "exceeds 100 MiB");
    auto past = make_file(R"({})", 0);
    past[0] = 200;  // header length beyond the file
    expect_error(past, "past the end");
    expect_error(make_file("{not json", 0), "not valid JSON");
    expect_error(make_file("[1,2]", 0), "not a JSON object");
    expect_error(make_file(R"({"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}})", 1), "unknown dtype");
    expect_error(make_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "non-negative");
    expect_error(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4), "shape needs 8");
    expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4), "begin > end");
    expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 2), "past the data region");
    expect_error(
        make_file(
            R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
            6),
        "overlaps");
    expect_error(make_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6), "hole");
    expect_error(make_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 6), "cover 4");
    expect_error(make_file(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", 4),
                 "overflows");
    expect_error(make_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0]}})", 4), "data_offsets");
    expect_error(make_file(R"({"__metadata__":{"x":1}})", 0), "not a string");
  }

  void truncatedFilesAreErrors() {
    // Every truncation of a real shard is refused with an Error, never a crash.
    const std::string path = test::fixtures_dir() + "/k3-tiny/model-00003-of-000003.safetensors";
    auto t = test::load_tensors(path);
    const auto& bytes = t.bytes;
    int rejected = 0;
    for (uint64_t cut : {uint64_t(0), uint64_t(4), uint64_t(8), uint64_t(100), t.header.data_start - 1,
                         t.header.data_start, uint64_t(bytes.size() - 1)}) {
      try {
        SafetensorsHeader::parse(bytes.data(), cut, cut, "cut");
      } catch (const Error&) {
        ++rejected;
      }
    }
    QCOMPARE(rejected, 7);
  }

  void randomCorruptionNeverCrashes() {
    const std::string path = test::fixtures_dir() + "/k3-tiny/model-00003-of-000003.safetensors";
    auto t = test::load_tensors(path);
    std::mt19937_64 rng(7);
    int errors = 0, accepted = 0;
    for (int i = 0; i < 3000; ++i) {
      auto b = t.bytes;
      const int flips = 1 + int(rng() % 4);
      for (int k = 0; k < flips; ++k) b[rng() % std::min<size_t>(b.size(), t.header.data_start)] = uint8_t(rng());
      try {
        auto h = SafetensorsHeader::parse(b.data(), b.size(), b.size(), "fuzz");
        for (const auto& ti : h.tensors) QVERIFY(ti.end <= b.size() - h.data_start);
        ++accepted;
      } catch (const Error&) {
        ++errors;
      }
    }
    QVERIFY(errors > 0);
    QCOMPARE(errors + accepted, 3000);
  }

  void writerRoundTrip() {
    const std::string dir = test::temp_dir("st");
    SafetensorsWriter w;
    w.add_bytes("x", DType::U8, {3}, {1, 2, 3});
    w.add_bytes("y", DType::F32, {1}, {0, 0, 128, 63});
    const uint64_t size = w.write(dir + "/a.safetensors");
    auto h = SafetensorsHeader::read(dir + "/a.safetensors");
    QCOMPARE(h.file_size, size);
    QCOMPARE(h.data_start % 8, uint64_t(0));
    QCOMPARE(h.find("y")->begin, uint64_t(3));
  }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
