// `deltafin generate-ids --draft X` prints the same ids as `--draft off` for every
// drafter, on k3-tiny and on a synthesized target with a DSpark drafter written by
// `deltafin synth --preset dspark-demo`; `--stats` reports proposed/accepted.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

using namespace deltafin;

namespace {

std::string bin() { return test::bin_dir() + "/deltafin"; }

test::RunResult gen(const std::string& root, const std::string& ids, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {bin(), "generate-ids", "--model-root", root, "--ids", ids, "--max-new", "14"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return test::run_process(argv);
}

}  // namespace

class TestDraftCli : public QObject {
  Q_OBJECT

 private slots:
  void k3TinyEveryDrafter() {
    const std::string k3 = test::fixtures_dir() + "/k3-tiny", ds = test::fixtures_dir() + "/dspark-tiny";
    for (const std::string ids :
         {"768,100,200,300,100,200,300,100", "768,5,6", "768,400,401,402,403,404,405,406,407,408"}) {
      const auto off = gen(k3, ids, {"--draft", "off", "--threads", "1"});
      QCOMPARE(off.code, 0);
      for (const std::string d : {"auto", "ngram", "dspark", "qwen"}) {
        for (bool always : {true, false}) {
          std::vector<std::string> extra = {"--draft", d, "--draft-model", ds, "--stats", "--threads", "1"};
          if (always) extra.push_back("--draft-always");
          const auto r = gen(k3, ids, extra);
          QVERIFY2(r.code == 0, r.err.c_str());
          QCOMPARE(r.out, off.out);
          const auto stats = nlohmann::json::parse(r.err);
          QVERIFY(stats["accepted"].get<int>() <= stats["proposed"].get<int>());
          QCOMPARE(stats["new_tokens"].get<int>(), 14);
          if (d == "dspark" && always) QVERIFY(stats["proposed"].get<int>() > 0);
          // qwen with a DSpark folder falls back silently to plain decoding.
          if (d == "qwen") QVERIFY(stats["draft_note"].get<std::string>().rfind("plain decoding", 0) == 0);
        }
      }
    }
  }

  void synthesizedTargetWithSynthesizedDSpark() {
    const std::string t = test::temp_dir("demo-k3"), d = test::temp_dir("demo-dspark");
    auto r = test::run_process({bin(), "synth", "--preset", "demo", "--out", t, "--set", "layers=3", "--set",
                                "mla_layers=3", "--force", "--quiet"});
    QVERIFY2(r.code == 0, r.err.c_str());
    // dspark-demo was made for the 6-layer demo target: a 3-layer one is refused (plain decoding).
    r = test::run_process({bin(), "synth", "--preset", "dspark-demo", "--out", d, "--force"});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY(r.out.find("RANDOM") != std::string::npos);
    QVERIFY(std::filesystem::exists(d + "/model.safetensors"));
    const std::string ids = "1024,7,8,9,7,8,9";
    const auto off = gen(t, ids, {"--draft", "off"});
    QCOMPARE(off.code, 0);
    auto refused = gen(t, ids, {"--draft", "dspark", "--draft-model", d, "--stats"});
    QCOMPARE(refused.code, 0);
    QCOMPARE(refused.out, off.out);
    QVERIFY(nlohmann::json::parse(refused.err)["draft_note"].get<std::string>().rfind("plain decoding: dspark", 0) ==
            0);
    // The full demo target it was made for.
    const std::string full = test::temp_dir("demo-k3-full");
    r = test::run_process({bin(), "synth", "--preset", "demo", "--out", full, "--force", "--quiet"});
    QVERIFY2(r.code == 0, r.err.c_str());
    const auto off2 = gen(full, ids, {"--draft", "off"});
    const auto on = gen(full, ids, {"--draft", "dspark", "--draft-model", d, "--draft-always", "--stats"});
    QVERIFY2(on.code == 0, on.err.c_str());
    QCOMPARE(on.out, off2.out);
    QVERIFY(nlohmann::json::parse(on.err)["proposed"].get<int>() > 0);
  }

  void badDraftChoiceIsAnError() {
    const auto r = gen(test::fixtures_dir() + "/k3-tiny", "768,5", {"--draft", "bogus"});
    QVERIFY(r.code != 0);
  }
};

QTEST_GUILESS_MAIN(TestDraftCli)
#include "test_draft_cli.moc"
