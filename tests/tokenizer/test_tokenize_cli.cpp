// `deltafin tokenize` / `deltafin detokenize` as a user runs them.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

using namespace deltafin;

class TestTokenizeCli : public QObject {
  Q_OBJECT
  std::string exe_, k3_;

 private slots:
  void initTestCase() {
    exe_ = test::bin_dir() + "/deltafin";
    k3_ = test::fixtures_dir() + "/k3-tiny";
    QVERIFY2(std::filesystem::exists(exe_), exe_.c_str());
  }

  void tokenize_prints_golden_ids() {
    std::ifstream f(test::fixtures_dir() + "/k3-tokenizer-golden.json");
    const auto golden = nlohmann::json::parse(f);
    for (const auto& c : {golden["cases"][0], golden["cases"][12]}) {
      const auto r = test::run_process({exe_, "tokenize", "--model-root", k3_, "--text", c["text"].get<std::string>()});
      QVERIFY2(r.code == 0, r.err.c_str());
      QCOMPARE(nlohmann::json::parse(r.out), c["ids"]);
    }
  }

  void specials_only_when_allowed() {
    const std::string text = "[BOS]plain text[EOS]";
    auto plain = test::run_process({exe_, "tokenize", "--model-root", k3_, "--text", text});
    auto special = test::run_process({exe_, "tokenize", "--model-root", k3_, "--text", text, "--allow-special"});
    QCOMPARE(plain.code, 0);
    QCOMPARE(special.code, 0);
    QCOMPARE(nlohmann::json::parse(special.out), nlohmann::json({768, 45, 231, 464, 288, 665, 769}));
    for (const auto& id : nlohmann::json::parse(plain.out)) QVERIFY(id.get<int>() < 768);
  }

  void detokenize_round_trips() {
    const std::string text = "tabs\tand\nnewlines \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80";
    const auto enc = test::run_process({exe_, "tokenize", "--model-root", k3_, "--text", text});
    QCOMPARE(enc.code, 0);
    const auto dec = test::run_process({exe_, "detokenize", "--model-root", k3_, "--ids", enc.out});
    QVERIFY2(dec.code == 0, dec.err.c_str());
    QCOMPARE(dec.out, text);
    // Space/comma separated ids and the JSON form.
    const auto ids = nlohmann::json::parse(enc.out);
    std::string listed;
    for (const auto& id : ids) listed += std::to_string(id.get<int>()) + ", ";
    const auto dec2 = test::run_process({exe_, "detokenize", "--model-root", k3_, "--ids", listed, "--json"});
    QCOMPARE(dec2.code, 0);
    QCOMPARE(nlohmann::json::parse(dec2.out)["text"].get<std::string>(), text);
  }

  void errors_are_reported_not_crashes() {
    const auto no_model =
        test::run_process({exe_, "tokenize", "--model-root", test::temp_dir("cli-empty"), "--text", "x"});
    QCOMPARE(no_model.code, 1);
    QVERIFY(no_model.err.find("no tokenizer") != std::string::npos);
    const auto bad_ids = test::run_process({exe_, "detokenize", "--model-root", k3_, "--ids", "1 two 3"});
    QCOMPARE(bad_ids.code, 1);
    QVERIFY(bad_ids.err.find("two") != std::string::npos);
    const auto foreign = test::run_process({exe_, "detokenize", "--model-root", k3_, "--ids", "[5000]"});
    QCOMPARE(foreign.code, 1);
    QVERIFY(foreign.err.find("5000") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestTokenizeCli)
#include "test_tokenize_cli.moc"
