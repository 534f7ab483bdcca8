// The heap-based merge loop against the textbook one (rescan all pairs, merge the lowest rank,
// leftmost on ties) on the K3 fixture ranks and on a merge-list vocabulary with ties.
#include <QFile>

#include <random>

#include "support/test_support.h"
#include "tokenizer/bpe_merge.h"

using namespace deltafin;

namespace {

BpeVocab fixture_vocab(bool whole_piece_lookup) {
  QFile f(QString::fromStdString(test::fixtures_dir() + "/k3-tiny/tiktoken.model"));
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read the fixture vocabulary");
  BpeVocab v;
  v.rule = BpeVocab::Rule::ConcatenationRank;
  v.whole_piece_lookup = whole_piece_lookup;
  for (const QByteArray& line : f.readAll().split('\n')) {
    const auto parts = line.trimmed().split(' ');
    if (parts.size() != 2) continue;
    const QByteArray bytes = QByteArray::fromBase64(parts[0]);
    const int rank = parts[1].toInt();
    if (static_cast<size_t>(rank) >= v.token_bytes.size()) v.token_bytes.resize(rank + 1);
    v.token_bytes[rank] = bytes.toStdString();
    v.ids_by_bytes[bytes.toStdString()] = rank;
    if (bytes.size() == 1) v.byte_token[static_cast<uint8_t>(bytes[0])] = rank;
  }
  return v;
}

// Quadratic reference: exactly tiktoken's _byte_pair_merge loop.
std::vector<int32_t> reference(const BpeVocab& v, const std::string& piece) {
  if (v.whole_piece_lookup)
    if (auto it = v.ids_by_bytes.find(piece); it != v.ids_by_bytes.end()) return {it->second};
  std::vector<std::string> parts;
  for (char c : piece) parts.emplace_back(1, c);
  for (;;) {
    int64_t best = -1;
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = v.ids_by_bytes.find(parts[i] + parts[i + 1]);
      if (it != v.ids_by_bytes.end() && (best < 0 || it->second < best)) best = it->second, at = i;
    }
    if (best < 0) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + at + 1);
  }
  std::vector<int32_t> ids;
  for (const auto& p : parts) ids.push_back(v.ids_by_bytes.at(p));
  return ids;
}

}  // namespace

class TestBpeMerge : public QObject {
  Q_OBJECT
 private slots:
  void heap_equals_reference_on_fixture_ranks() {
    for (bool whole : {false, true}) {
      const BpeVocab v = fixture_vocab(whole);
      QCOMPARE(v.token_bytes.size(), size_t(768));
      std::mt19937 rng(7);
      const std::string alphabet = "aeiostnrl hxyzAEIOST.,'\n";
      for (int trial = 0; trial < 3000; ++trial) {
        std::string piece;
        const size_t n = 1 + rng() % 40;
        for (size_t i = 0; i < n; ++i)
          piece.push_back(trial % 3 == 0 ? static_cast<char>(rng() & 0xFF) : alphabet[rng() % alphabet.size()]);
        std::vector<int32_t> got;
        bpe_encode_piece(v, piece, got);
        QCOMPARE(got, reference(v, piece));
      }
      // Repetitive pieces are where tie-breaking shows.
      for (const std::string unit : {"a", "ab", "aab", "xx", " ", "the "}) {
        std::string piece;
        for (int i = 0; i < 60; ++i) {
          piece += unit;
          std::vector<int32_t> got;
          bpe_encode_piece(v, piece, got);
          QCOMPARE(got, reference(v, piece));
        }
      }
    }
  }

  void merge_list_takes_lowest_priority_leftmost() {
    // Bytes a=0 b=1 c=2; merges: (b,c)->"bc"=3 priority 0, (a,b)->"ab"=4 priority 1,
    // (a,a)->"aa"=5 priority 2.
    BpeVocab v;
    v.rule = BpeVocab::Rule::MergeList;
    v.token_bytes = {"a", "b", "c", "bc", "ab", "aa"};
    v.byte_token.fill(0);
    v.byte_token['a'] = 0, v.byte_token['b'] = 1, v.byte_token['c'] = 2;
    v.merges[BpeVocab::pair_key(1, 2)] = {0, 3};
    v.merges[BpeVocab::pair_key(0, 1)] = {1, 4};
    v.merges[BpeVocab::pair_key(0, 0)] = {2, 5};
    auto enc = [&](const std::string& s) {
      std::vector<int32_t> out;
      bpe_encode_piece(v, s, out);
      return out;
    };
    QCOMPARE(enc("abc"), (std::vector<int32_t>{0, 3}));  // bc before ab
    QCOMPARE(enc("abab"), (std::vector<int32_t>{4, 4}));
    QCOMPARE(enc("aaa"), (std::vector<int32_t>{5, 0}));  // leftmost pair first
    QCOMPARE(enc("aaaaa"), (std::vector<int32_t>{5, 5, 0}));
    QCOMPARE(enc(""), (std::vector<int32_t>{}));
  }
};

QTEST_GUILESS_MAIN(TestBpeMerge)
#include "test_bpe_merge.moc"
