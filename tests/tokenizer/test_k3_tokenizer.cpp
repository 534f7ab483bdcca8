// The K3 tokenizer against tiktoken's own output (k3-tokenizer-golden.json, 38 cases), plus
// exact byte round trips, injection safety and adversarially long single-class runs.
#include <QElapsedTimer>
#include <QStandardPaths>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "support/test_support.h"
#include "tokenizer/tiktoken_loader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_corpus.h"

using namespace deltafin;

class TestK3Tokenizer : public QObject {
  Q_OBJECT
  std::unique_ptr<Tokenizer> tok_;
  nlohmann::json golden_;

  static std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

 private slots:
  void initTestCase() {
    tok_ = load_tokenizer(test::fixtures_dir() + "/k3-tiny");
    std::ifstream f(test::fixtures_dir() + "/k3-tokenizer-golden.json");
    QVERIFY(f.good());
    golden_ = nlohmann::json::parse(f);
  }

  void shape() {
    QCOMPARE(tok_->format(), std::string_view("tiktoken"));
    QCOMPARE(tok_->vocab_size(), 1024);
    QCOMPARE(tok_->special_id("[BOS]").value_or(-1), 768);
    QCOMPARE(tok_->special_id("<|end_of_msg|>").value_or(-1), 770);
    QCOMPARE(tok_->special_id("[PAD]").value_or(-1), 1023);
    QVERIFY(!tok_->special_id("hello"));
    QVERIFY(tok_->is_special(900));
    QVERIFY(!tok_->is_special(767));
    QCOMPARE(tok_->token_bytes(770), std::string("<|end_of_msg|>"));
    QVERIFY_THROWS_EXCEPTION(Error, tok_->token_bytes(1024));
    QVERIFY_THROWS_EXCEPTION(Error, tok_->token_bytes(-1));
  }

  void pattern_is_the_golden_one() {
    QCOMPARE(std::string(kK3PreTokenizerPattern), golden_["pattern"].get<std::string>());
  }

  void golden_cases_data() {
    QTest::addColumn<int>("index");
    QTest::addColumn<bool>("special");
    int i = 0;
    for (const auto& c : golden_["cases"]) {
      (void)c;
      QTest::newRow(("case " + std::to_string(i)).c_str()) << i << false;
      ++i;
    }
    i = 0;
    for (const auto& c : golden_["special_cases"]) {
      (void)c;
      QTest::newRow(("special case " + std::to_string(i)).c_str()) << i << true;
      ++i;
    }
  }
  void golden_cases() {
    QFETCH(int, index);
    QFETCH(bool, special);
    const auto& c = golden_[special ? "special_cases" : "cases"][index];
    const std::string text = c["text"];
    const std::vector<int32_t> expected = ids_of(c["ids"]);
    const std::vector<int32_t> got = tok_->encode(text, special);
    QCOMPARE(got, expected);
    QCOMPARE(tok_->decode(got), text);
  }

  void golden_case_count() { QCOMPARE(golden_["cases"].size() + golden_["special_cases"].size(), size_t(38)); }

  void special_text_is_plain_unless_allowed() {
    for (const auto& c : golden_["special_cases"]) {
      const std::string text = c["text"];
      const auto plain = tok_->encode(text, false);
      for (int32_t id : plain) QVERIFY2(!tok_->is_special(id), text.c_str());
      QCOMPARE(tok_->decode(plain), text);
      QVERIFY(plain != ids_of(c["ids"]));
    }
  }

  void arbitrary_bytes_round_trip() {
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 2000; ++trial) {
      const size_t n = rng() % 64;
      std::string s;
      for (size_t i = 0; i < n; ++i) {
        // Mix raw bytes with ASCII and pieces of specials so every pattern branch is hit.
        switch (rng() % 4) {
          case 0:
            s.push_back(static_cast<char>(rng() & 0xFF));
            break;
          case 1:
            s.push_back(static_cast<char>(' ' + rng() % 95));
            break;
          case 2:
            s += "<|open|>";
            break;
          default:
            s += "\xE4\xB8\xAD";
            break;  // a Han character
        }
      }
      for (bool allow : {false, true}) {
        const auto ids = tok_->encode(s, allow);
        QCOMPARE(tok_->decode(ids), s);
        if (!allow)
          for (int32_t id : ids) QVERIFY(!tok_->is_special(id));
      }
    }
  }

  void long_single_class_runs() {
    const std::vector<std::pair<const char*, std::string>> units = {
        {"lowercase", "x"},           {"lowercase pairs", "ab"}, {"lowercase word", "the"},
        {"uppercase", "X"},           {"digits", "7"},           {"spaces", " "},
        {"newlines", "\n"},           {"punctuation", "!"},      {"han", "\xE4\xB8\xAD"},
        {"hiragana", "\xE3\x81\x82"}, {"combining", "\xCC\x81"}};
    for (const auto& [name, unit] : units) {
      std::string text;
      for (int i = 0; i < 100000; ++i) text += unit;
      QElapsedTimer timer;
      timer.start();
      const auto ids = tok_->encode(text);
      const qint64 ms = timer.elapsed();
      qInfo("100,000 x %s: %zu ids in %lld ms", name, ids.size(), static_cast<long long>(ms));
      QVERIFY(!ids.empty());
      QCOMPARE(tok_->decode(ids), text);
    }
  }

  // Beyond the 38 goldens: an independent encoder (tests/node/encode_k3_tiktoken.js: the K3
  // pattern in V8's regex engine, tiktoken's quadratic merge loop) on 600 varied strings.
  void matches_independent_reference_on_corpus() {
    const std::string node = QStandardPaths::findExecutable("node").toStdString();
    if (node.empty()) DELTAFIN_SKIP_UNLESS_CI("node is not installed: the independent K3 cross-check needs it");
    const std::vector<std::string> corpus = make_tokenizer_corpus(600, 31337);
    const std::string input = test::temp_dir("k3-corpus") + "/corpus.json";
    std::ofstream(input) << nlohmann::json(corpus).dump();
    const auto r = test::run_process({node, std::string(DELTAFIN_NODE_TOOLS_DIR) + "/encode_k3_tiktoken.js",
                                      test::fixtures_dir() + "/k3-tiny/tiktoken.model", input},
                                     300000);
    QVERIFY2(r.code == 0, (r.err + r.out.substr(0, 2000)).c_str());
    const auto expected = nlohmann::json::parse(r.out);
    QCOMPARE(expected.size(), corpus.size());
    size_t mismatches = 0;
    std::string first;
    for (size_t i = 0; i < corpus.size(); ++i) {
      const auto got = tok_->encode(corpus[i]);
      const auto want = expected[i].get<std::vector<int32_t>>();
      if (got != want && mismatches++ == 0)
        first = nlohmann::json(corpus[i]).dump() + ": ours " + nlohmann::json(got).dump() + " reference " +
                nlohmann::json(want).dump();
    }
    qInfo("independent K3 cross-check: %zu strings, %zu mismatches", corpus.size(), mismatches);
    QVERIFY2(mismatches == 0, first.c_str());
  }

  void decode_rejects_foreign_ids() {
    const std::vector<int32_t> bad = {1, 5000};
    QVERIFY_THROWS_EXCEPTION(Error, tok_->decode(bad));
  }

  void missing_or_damaged_files_are_errors() {
    QVERIFY_THROWS_EXCEPTION(Error, load_tokenizer(test::temp_dir("tok-empty")));
    const std::string dir = test::temp_dir("tok-bad");
    {
      std::ofstream(dir + "/tiktoken.model") << "not base64!! 0\n";
      std::ofstream(dir + "/tokenizer_config.json") << "{}";
    }
    QVERIFY_THROWS_EXCEPTION(Error, load_tokenizer(dir));
    {
      std::ofstream(dir + "/tiktoken.model") << "YQ== 0\nYg== 2\n";  // rank 1 missing
    }
    QVERIFY_THROWS_EXCEPTION(Error, load_tokenizer(dir));
  }
};

QTEST_GUILESS_MAIN(TestK3Tokenizer)
#include "test_k3_tokenizer.moc"
