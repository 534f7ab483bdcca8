#include "tokenizer/tiktoken_loader.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "tokenizer/bpe_tokenizer.h"

namespace deltafin {

const std::string_view kK3PreTokenizerPattern =
    R"([\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

constexpr int kK3SpecialCount = 256;

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const int v = base64_value(in[i]);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=') return false;
  return (in.size() % 4) == 0;
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + what + " " + path, "check that the model is fully installed");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::unique_ptr<Tokenizer> load_tiktoken_tokenizer(const std::string& tiktoken_model_path,
                                                   const std::string& tokenizer_config_path) {
  const std::string damaged = "the model's tokenizer files are damaged: reinstall the model";
  BpeTokenizerSpec spec;
  spec.format = "tiktoken";
  spec.pattern = std::string(kK3PreTokenizerPattern);
  BpeVocab& vocab = spec.vocab;
  vocab.rule = BpeVocab::Rule::ConcatenationRank;
  vocab.whole_piece_lookup = true;

  const std::string text = read_file(tiktoken_model_path, "the tokenizer vocabulary");
  std::map<int64_t, std::string> by_rank;
  std::istringstream lines(text);
  std::string line, bytes;
  size_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    const std::string where = tiktoken_model_path + " line " + std::to_string(line_no);
    if (space == std::string::npos || !base64_decode(std::string_view(line).substr(0, space), bytes) || bytes.empty())
      throw Error(where + " is not 'base64 rank'", damaged);
    int64_t rank = -1;
    try {
      size_t used = 0;
      rank = std::stoll(line.substr(space + 1), &used);
      if (used != line.size() - space - 1) rank = -1;
    } catch (const std::exception&) {
      rank = -1;
    }
    if (rank < 0 || rank > 0x7FFFFFFF - kK3SpecialCount) throw Error(where + " has a bad rank", damaged);
    if (!by_rank.emplace(rank, bytes).second) throw Error(where + " repeats rank " + std::to_string(rank), damaged);
  }
  const auto n_ranks = static_cast<int32_t>(by_rank.size());
  if (n_ranks == 0) throw Error(tiktoken_model_path + " holds no tokens", damaged);
  if (by_rank.rbegin()->first != n_ranks - 1)
    throw Error(tiktoken_model_path + ": ranks are not contiguous from 0", damaged);
  vocab.token_bytes.resize(n_ranks);
  vocab.byte_token.fill(-1);
  for (auto& [rank, b] : by_rank) {
    const auto id = static_cast<int32_t>(rank);
    if (!vocab.ids_by_bytes.emplace(b, id).second)
      throw Error(tiktoken_model_path + ": two ranks hold the same bytes (rank " + std::to_string(rank) + ")", damaged);
    if (b.size() == 1) vocab.byte_token[static_cast<uint8_t>(b[0])] = id;
    vocab.token_bytes[id] = std::move(b);
  }
  for (int b = 0; b < 256; ++b)
    if (vocab.byte_token[b] < 0)
      throw Error(tiktoken_model_path + ": byte " + std::to_string(b) + " has no token", damaged);

  nlohmann::json config;
  try {
    config = nlohmann::json::parse(read_file(tokenizer_config_path, "the tokenizer configuration"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(tokenizer_config_path + " is not valid JSON: " + e.what(), damaged);
  }
  std::map<int32_t, std::string> named;
  if (auto it = config.find("added_tokens_decoder"); it != config.end() && it->is_object()) {
    for (const auto& [key, entry] : it->items()) {
      int32_t id = -1;
      try {
        id = std::stoi(key);
      } catch (const std::exception&) {
      }
      if (id < n_ranks || id >= n_ranks + kK3SpecialCount || !entry.is_object() || !entry.contains("content") ||
          !entry["content"].is_string())
        throw Error(tokenizer_config_path + ": added token '" + key + "' is not one of the 256 specials after the " +
                        std::to_string(n_ranks) + " ranks",
                    damaged);
      named[id] = entry["content"].get<std::string>();
    }
  }
  for (int32_t id = n_ranks; id < n_ranks + kK3SpecialCount; ++id) {
    auto it = named.find(id);
    std::string name = it != named.end() ? it->second : "<|reserved_token_" + std::to_string(id) + "|>";
    if (name.empty())
      throw Error(tokenizer_config_path + ": special token " + std::to_string(id) + " has empty text", damaged);
    spec.specials.push_back({std::move(name), id});
  }
  return std::make_unique<BpeTokenizer>(std::move(spec));
}

}  // namespace deltafin
