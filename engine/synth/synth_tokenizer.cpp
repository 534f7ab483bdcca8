#include "synth/synth_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"

namespace deltafin {

namespace {

const char* kCorpus =
    "The capital of France is Paris. Hello, world! How are you today? I am fine, thank you.\n"
    "Deltafin runs the full Kimi K3 model on one machine, exactly as it was shipped, and streams its experts "
    "from disk into memory when they are needed. The quick brown fox jumps over the lazy dog.\n"
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"
    "for (int i = 0; i < count; ++i) { total += values[i]; }\n"
    "It's a small model with random weights; don't expect it to say anything sensible. We'll see what it does.\n"
    "你好，世界！今天天气很好。我们一起学习。 Bonjour le monde. Hallo Welt, wie geht es dir? 12345 67890\n"
    "Numbers: 3.14159, 2.71828, 1000000. Emoji: 🙂🚀. Tabs\tand\nnewlines\r\n are whitespace too.\n";

std::string b64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == in.size()) {
    unsigned v = uint8_t(in[i]) << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    unsigned v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

// Words: a run of non-space bytes with the space before it, or a whitespace run.
std::vector<std::vector<std::string>> corpus_words() {
  std::vector<std::vector<std::string>> words;
  std::string text = kCorpus;
  size_t i = 0;
  auto sp = [&](size_t k) { return std::isspace(static_cast<unsigned char>(text[k])) != 0; };
  while (i < text.size()) {
    size_t j = i;
    if (text[i] == ' ' && i + 1 < text.size() && !sp(i + 1)) {
      for (j = i + 1; j < text.size() && !sp(j); ++j) {
      }
    } else if (sp(i)) {
      while (j < text.size() && sp(j)) ++j;
    } else {
      while (j < text.size() && !sp(j)) ++j;
    }
    std::vector<std::string> w;
    for (size_t k = i; k < j; ++k) w.emplace_back(1, text[k]);
    words.push_back(std::move(w));
    i = j;
  }
  return words;
}

}  // namespace

void write_synth_tokenizer(const std::string& out, int ranks) {
  std::vector<std::string> vocab;
  std::set<std::string> have;
  for (int b = 0; b < 256; ++b) {
    vocab.emplace_back(1, static_cast<char>(b));
    have.insert(vocab.back());
  }
  // Greedy BPE training: merge the most frequent adjacent pair until the corpus is exhausted.
  auto words = corpus_words();
  while (static_cast<int>(vocab.size()) < ranks) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& w : words)
      for (size_t i = 0; i + 1 < w.size(); ++i) ++counts[{w[i], w[i + 1]}];
    std::pair<std::string, std::string> best;
    int best_n = 1;
    for (const auto& [p, n] : counts)
      if (n > best_n && !have.count(p.first + p.second)) best = p, best_n = n;
    if (best_n < 2) break;
    const std::string merged = best.first + best.second;
    vocab.push_back(merged);
    have.insert(merged);
    for (auto& w : words) {
      std::vector<std::string> nw;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == best.first && w[i + 1] == best.second) {
          nw.push_back(merged);
          ++i;
        } else {
          nw.push_back(w[i]);
        }
      }
      w = std::move(nw);
    }
  }
  // Then pairs of existing tokens (printable ASCII first) so every rank is a valid merge.
  for (size_t a = 32; a < vocab.size() && static_cast<int>(vocab.size()) < ranks; ++a)
    for (size_t b = 32; b < 127 && static_cast<int>(vocab.size()) < ranks; ++b) {
      std::string m = vocab[a] + vocab[b];
      if (m.size() <= 8 && have.insert(m).second) vocab.push_back(m);
    }
  if (static_cast<int>(vocab.size()) != ranks)
    throw Error("synth tokenizer: could not build " + std::to_string(ranks) + " ranks");

  std::ofstream tk(out + "/tiktoken.model", std::ios::binary);
  for (size_t r = 0; r < vocab.size(); ++r) tk << b64(vocab[r]) << " " << r << "\n";

  const std::map<int, std::string> named = {{0, "[BOS]"},
                                            {1, "[EOS]"},
                                            {2, "<|end_of_msg|>"},
                                            {3, "<|open|>"},
                                            {4, "<|close|>"},
                                            {5, "<|sep|>"},
                                            {6, "[start_header_id]"},
                                            {7, "[end_header_id]"},
                                            {9, "[EOT]"},
                                            {18, "<|media_begin|>"},
                                            {19, "<|media_content|>"},
                                            {20, "<|media_end|>"},
                                            {21, "<|media_pad|>"},
                                            {254, "[UNK]"},
                                            {255, "[PAD]"}};
  nlohmann::ordered_json added = nlohmann::ordered_json::object();
  for (int i = 0; i < 256; ++i) {
    auto it = named.find(i);
    const std::string content = it != named.end() ? it->second : "<|reserved_token_" + std::to_string(ranks + i) + "|>";
    added[std::to_string(ranks + i)] = {{"content", content}, {"lstrip", false},      {"normalized", false},
                                        {"rstrip", false},    {"single_word", false}, {"special", true}};
  }
  nlohmann::ordered_json cfg = {{"added_tokens_decoder", added},
                                {"bos_token", "[BOS]"},
                                {"eos_token", "[EOS]"},
                                {"pad_token", "[PAD]"},
                                {"unk_token", "[UNK]"},
                                {"model_max_length", 1048576},
                                {"tokenizer_class", "TikTokenTokenizer"}};
  std::ofstream(out + "/tokenizer_config.json") << cfg.dump(2) << "\n";
}

}  // namespace deltafin
