// Streaming decode never shows half a character: every emitted chunk is valid UTF-8, and the
// chunks add up to the (sanitized) full decode whichever way the ids are split.
#include <random>

#include "base/error.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

using namespace deltafin;

class TestUtf8Stream : public QObject {
  Q_OBJECT
  std::unique_ptr<Tokenizer> tok_;

 private slots:
  void initTestCase() { tok_ = load_tokenizer(test::fixtures_dir() + "/k3-tiny"); }

  void sanitize_follows_maximal_subparts() {
    QCOMPARE(utf8::sanitize("abc"), std::string("abc"));
    QCOMPARE(utf8::sanitize("\xE4\xB8\xAD"), std::string("\xE4\xB8\xAD"));
    QCOMPARE(utf8::sanitize("\xE4\xB8"), std::string(utf8::kReplacement));         // unfinished
    QCOMPARE(utf8::sanitize("\xE4\xB8x"), std::string(utf8::kReplacement) + "x");  // one subpart
    QCOMPARE(utf8::sanitize("\xC0\xAF"), std::string(utf8::kReplacement) + std::string(utf8::kReplacement));
    QCOMPARE(utf8::sanitize("\xED\xA0\x80"), std::string(utf8::kReplacement) + std::string(utf8::kReplacement) +
                                                 std::string(utf8::kReplacement));  // surrogate
    QCOMPARE(utf8::sanitize("\xF4\x90\x80\x80").size(), size_t(12));                // above U+10FFFF
    QVERIFY(utf8::is_valid("\xF0\x9F\x98\x80"));
    QVERIFY(!utf8::is_valid("\xF0\x9F\x98"));
  }

  void streamed_chunks_are_whole_characters() {
    const std::string text = "emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 \xE4\xBD\xA0\xE5\xA5\xBD caf\xC3\xA9 \xD8\xB9";
    const auto ids = tok_->encode(text);
    IncrementalDecoder stream(*tok_);
    std::string shown;
    bool held_back = false;
    for (int32_t id : ids) {
      const std::string chunk = stream.push(id);
      QVERIFY(utf8::is_valid(chunk));
      held_back = held_back || stream.pending_bytes() > 0;
      shown += chunk;
    }
    shown += stream.finish();
    QCOMPARE(shown, text);
    // The fixture vocabulary has no multi-byte emoji token, so some bytes must have waited.
    QVERIFY(held_back);
  }

  void random_ids_stream_to_valid_text() {
    std::mt19937 rng(99);
    for (int trial = 0; trial < 500; ++trial) {
      std::vector<int32_t> ids;
      const size_t n = rng() % 40;
      for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>(rng() % 768));
      IncrementalDecoder stream(*tok_);
      std::string shown;
      // Feed in random-sized groups: the grouping must not change the result.
      for (size_t i = 0; i < ids.size();) {
        const size_t k = std::min(ids.size() - i, size_t(1 + rng() % 3));
        const std::string chunk = stream.push(std::span<const int32_t>(ids.data() + i, k));
        QVERIFY(utf8::is_valid(chunk));
        shown += chunk;
        i += k;
      }
      shown += stream.finish();
      QCOMPARE(shown, utf8::sanitize(tok_->decode(ids)));
    }
  }

  void bad_id_is_an_error() {
    IncrementalDecoder stream(*tok_);
    QVERIFY_THROWS_EXCEPTION(Error, stream.push(int32_t(4096)));
  }
};

QTEST_GUILESS_MAIN(TestUtf8Stream)
#include "test_utf8_stream.moc"
