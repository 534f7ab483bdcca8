#include "tokenizer_corpus.h"

#include <random>

namespace {

const std::vector<std::string> kFragments = {
    // Latin, contractions, case shapes
    "Hello",
    "world",
    "The quick brown fox",
    "jumps over the lazy dog",
    "I'm",
    "you'll",
    "we'd",
    "they've",
    "it's",
    "DON'T",
    "I'LL",
    "SHE'S",
    "camelCaseName",
    "snake_case_name",
    "HTTPServer",
    "iPhone",
    "McDonald's",
    "naïve",
    "café",
    "Straße",
    "ÆØÅ æøå",
    "Ünïcödé",
    // other scripts
    "Привет, мир",
    "Ελληνικά",
    "שלום עולם",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "สวัสดีครับ",
    "你好，世界！",
    "这是一个测试。",
    "日本語のテキスト",
    "カタカナ",
    "한국어 문장입니다",
    "Tiếng Việt có dấu",
    "ქართული",
    "Հայերեն",
    "ᚠᚢᚦ",
    // combining marks and NFC-sensitive text (decomposed forms)
    "e\xCC\x81",
    "a\xCC\x8A",
    "n\xCC\x83o",
    "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB",
    "Å",
    "ﬁ ligature",
    "①②③",
    "Ⅻ",
    // emoji, ZWJ sequences, flags, skin tones, variation selectors
    "😀",
    "🎉🎉",
    "👩‍💻",
    "👨‍👩‍👧‍👦",
    "🇫🇷🇯🇵",
    "👍🏽",
    "❤️",
    "✈︎",
    "🫠",
    // code
    "def f(x):\n    return x**2",
    "if (a && b || !c) { x += 1; }",
    "for (int i = 0; i < n; ++i)",
    "#include <vector>",
    "<div class=\"x\">hi</div>",
    "SELECT * FROM t WHERE id = 42;",
    "https://example.com/path?q=1&r=2#frag",
    "const re = /[a-z]+/g;",
    "$HOME/.config",
    "a->b",
    "x::y",
    "λx.x",
    "fn main() {}",
    "```python\n",
    "    ",
    // numbers
    "0",
    "42",
    "3.14159",
    "1,000,000",
    "12345678901234567890",
    "v2.0.1",
    "1e-9",
    "0x1F",
    "٣٤٥",
    "१२३",
    "½",
    "2024-01-15",
    "10:30pm",
    "$19.99",
    "-273.15°C",
    // whitespace and punctuation
    " ",
    "  ",
    "   ",
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    "\r\n\r\n",
    " \n ",
    "\xC2\xA0",
    "\xE3\x80\x80",
    "\xE2\x80\x83",
    "\xE2\x80\xA8",
    "\x0B",
    "\x0C",
    "!!!",
    "???",
    "...",
    "—",
    "“quoted”",
    "'single'",
    "`back`",
    "(paren)",
    "[bracket]",
    "{brace}",
    "@user",
    "#tag",
    "50%",
    "a/b",
    "<|im_start|>",
    "<think>",
};

const std::vector<std::string> kSeparators = {"", " ", "  ", "\n", "\t", ", ", ". ", "\r\n", " \n", "'", "-", "_"};

}  // namespace

std::vector<std::string> make_tokenizer_corpus(size_t count, unsigned seed) {
  std::mt19937 rng(seed);  // mt19937's sequence is fixed by the standard: same corpus everywhere
  std::vector<std::string> corpus;
  corpus.reserve(count);
  // Every fragment alone first, then with a leading space, then random mixtures.
  for (const auto& f : kFragments) corpus.push_back(f);
  for (const auto& f : kFragments) corpus.push_back(" " + f);
  while (corpus.size() < count) {
    std::string s;
    const size_t parts = 1 + rng() % 8;
    for (size_t p = 0; p < parts; ++p) {
      s += kFragments[rng() % kFragments.size()];
      s += kSeparators[rng() % kSeparators.size()];
    }
    if (rng() % 10 == 0) s += std::string(1 + rng() % 12, ' ');  // trailing whitespace run
    if (rng() % 10 == 0) s = std::string(1 + rng() % 6, '\n') + s;
    corpus.push_back(std::move(s));
  }
  corpus.resize(count);
  return corpus;
}
