#include "tokenizer/hf_tokenizer_loader.h"

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "base/error.h"
#include "tokenizer/bpe_tokenizer.h"

namespace deltafin {
namespace {

using nlohmann::json;

// The built-in regex of a ByteLevel pre-tokenizer with use_regex (GPT-2's).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the other
// bytes for U+0100 onwards in byte order. Vocabulary strings are spelled in these characters.
std::unordered_map<char32_t, uint8_t> unicode_to_byte() {
  std::unordered_map<char32_t, uint8_t> table;
  char32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[printable ? static_cast<char32_t>(b) : next_extra++] = static_cast<uint8_t>(b);
  }
  return table;
}

// Decodes one vocabulary string (UTF-8 of byte-level characters) to the bytes it stands for.
bool to_bytes(const std::string& s, const std::unordered_map<char32_t, uint8_t>& table, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    char32_t cp;
    int len;
    if (c < 0x80) cp = c, len = 1;
    else if ((c & 0xE0) == 0xC0) cp = c & 0x1F, len = 2;
    else if ((c & 0xF0) == 0xE0) cp = c & 0x0F, len = 3;
    else return false;  // byte-level characters are all below U+0200
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    auto it = table.find(cp);
    if (it == table.end()) return false;
    out.push_back(static_cast<char>(it->second));
    i += len;
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path, "check that the model is fully installed");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string type_of(const json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& path) {
  const std::string unsupported = "this tokenizer.json is of a kind Deltafin does not support";
  const std::string damaged = "the tokenizer file is damaged: reinstall the model";
  json doc;
  try {
    doc = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(path + " is not valid JSON: " + e.what(), damaged);
  }
  try {
    BpeTokenizerSpec spec;
    spec.format = "tokenizer.json";
    const json& model = doc.at("model");
    if (type_of(model) != "BPE") throw Error(path + ": model type '" + type_of(model) + "' is not BPE", unsupported);
    if (model.value("byte_fallback", false) || model.value("ignore_merges", false) ||
        !model.value("continuing_subword_prefix", json("")).get<std::string>().empty() ||
        !model.value("end_of_word_suffix", json("")).get<std::string>().empty())
      throw Error(path + ": BPE options other than plain byte-level merges", unsupported);

    const json& normalizer = doc.value("normalizer", json());
    if (type_of(normalizer) == "NFC") spec.nfc = true;
    else if (!normalizer.is_null()) throw Error(path + ": normalizer '" + type_of(normalizer) + "'", unsupported);

    const json& pre = doc.at("pre_tokenizer");
    if (type_of(pre) == "ByteLevel" && pre.value("use_regex", true) && !pre.value("add_prefix_space", false)) {
      spec.pattern = std::string(kGpt2Pattern);
    } else if (type_of(pre) == "Sequence" && pre.at("pretokenizers").size() == 2 &&
               type_of(pre["pretokenizers"][0]) == "Split" && type_of(pre["pretokenizers"][1]) == "ByteLevel") {
      const json& split = pre["pretokenizers"][0];
      const json& byte_level = pre["pretokenizers"][1];
      if (split.value("behavior", "") != "Isolated" || split.value("invert", false) ||
          !split.at("pattern").contains("Regex") || byte_level.value("use_regex", true) ||
          byte_level.value("add_prefix_space", false))
        throw Error(path + ": pre-tokenizer options other than Split(Regex, Isolated) + ByteLevel", unsupported);
      spec.pattern = split["pattern"]["Regex"].get<std::string>();
    } else {
      throw Error(path + ": pre-tokenizer '" + type_of(pre) + "'", unsupported);
    }

    const auto table = unicode_to_byte();
    BpeVocab& vocab = spec.vocab;
    vocab.rule = BpeVocab::Rule::MergeList;
    std::unordered_map<std::string, int32_t> id_by_spelling;
    std::string bytes;
    for (const auto& [spelling, id_json] : model.at("vocab").items()) {
      const auto id = id_json.get<int64_t>();
      if (id < 0 || id > 0x7FFFFFF) throw Error(path + ": vocab id out of range for '" + spelling + "'", damaged);
      if (!to_bytes(spelling, table, bytes) || bytes.empty())
        throw Error(path + ": vocab entry '" + spelling + "' is not byte-level", unsupported);
      if (static_cast<size_t>(id) >= vocab.token_bytes.size()) vocab.token_bytes.resize(id + 1);
      vocab.token_bytes[id] = bytes;
      vocab.ids_by_bytes.emplace(bytes, static_cast<int32_t>(id));
      id_by_spelling.emplace(spelling, static_cast<int32_t>(id));
    }
    vocab.byte_token.fill(-1);
    for (int b = 0; b < 256; ++b) {
      auto it = vocab.ids_by_bytes.find(std::string(1, static_cast<char>(b)));
      if (it == vocab.ids_by_bytes.end()) throw Error(path + ": byte " + std::to_string(b) + " has no token", damaged);
      vocab.byte_token[b] = it->second;
    }
    int32_t priority = 0;
    for (const json& m : model.at("merges")) {
      std::string left, right;
      if (m.is_array() && m.size() == 2) {
        left = m[0].get<std::string>();
        right = m[1].get<std::string>();
      } else if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ', 1);
        if (space == std::string::npos) throw Error(path + ": merge '" + s + "' is not 'left right'", damaged);
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else {
        throw Error(path + ": a merge is neither a pair nor a string", damaged);
      }
      auto l = id_by_spelling.find(left), r = id_by_spelling.find(right), merged = id_by_spelling.find(left + right);
      if (l == id_by_spelling.end() || r == id_by_spelling.end() || merged == id_by_spelling.end())
        throw Error(path + ": merge '" + left + " " + right + "' uses a token missing from the vocab", damaged);
      vocab.merges.emplace(BpeVocab::pair_key(l->second, r->second), BpeVocab::Merge{priority++, merged->second});
    }
    for (const json& added : doc.value("added_tokens", json::array())) {
      if (added.value("lstrip", false) || added.value("rstrip", false) || added.value("single_word", false))
        throw Error(path + ": added token '" + added.value("content", "") + "' strips or matches single words",
                    unsupported);
      spec.specials.push_back({added.at("content").get<std::string>(), added.at("id").get<int32_t>()});
    }
    return std::make_unique<BpeTokenizer>(std::move(spec));
  } catch (const json::exception& e) {
    throw Error(path + " lacks a field the BPE tokenizer needs: " + e.what(), damaged);
  }
}

}  // namespace deltafin
