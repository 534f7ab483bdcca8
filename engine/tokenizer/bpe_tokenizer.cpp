#include "tokenizer/bpe_tokenizer.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "base/error.h"

namespace deltafin {
namespace {

enum : uint8_t { kUnused = 0, kRegular = 1, kSpecial = 2 };

std::string nfc(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw Error("ICU has no NFC normalizer", "reinstall libicu");
  const icu::UnicodeString s =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  // Leave already-normalized text byte for byte, so bytes that are not valid UTF-8 survive.
  if (normalizer->isNormalized(s, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  const icu::UnicodeString normalized = normalizer->normalize(s, status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

}  // namespace

int32_t Tokenizer::require_special_id(std::string_view name) const {
  if (auto id = special_id(name)) return *id;
  throw Error("the tokenizer has no special token " + std::string(name),
              "this model's tokenizer files do not match the chat format in use");
}

BpeTokenizer::BpeTokenizer(BpeTokenizerSpec spec)
    : format_(std::move(spec.format)),
      vocab_(std::move(spec.vocab)),
      splitter_(std::make_unique<RegexSplitter>(spec.pattern)),
      nfc_(spec.nfc) {
  size_t size = vocab_.token_bytes.size();
  for (const auto& s : spec.specials) {
    if (s.id < 0) throw Error("special token " + s.text + " has a negative id", "the tokenizer files are damaged");
    size = std::max(size, static_cast<size_t>(s.id) + 1);
  }
  bytes_by_id_.resize(size);
  kind_by_id_.assign(size, kUnused);
  for (size_t id = 0; id < vocab_.token_bytes.size(); ++id) {
    bytes_by_id_[id] = vocab_.token_bytes[id];
    kind_by_id_[id] = vocab_.token_bytes[id].empty() ? kUnused : kRegular;
  }
  for (const auto& s : spec.specials) {
    if (kind_by_id_[s.id] == kRegular && bytes_by_id_[s.id] != s.text)
      throw Error("added token " + s.text + " reuses the id of an ordinary token (" + std::to_string(s.id) + ")",
                  "the tokenizer files are damaged");
    bytes_by_id_[s.id] = s.text;
    kind_by_id_[s.id] = kSpecial;
    special_ids_.emplace(s.text, s.id);
    special_matcher_.add(s.text, s.id);
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (!allow_special) {
    encode_ordinary(text, out);
    return out;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    auto match = special_matcher_.find(text, pos);
    const size_t plain_end = match ? match->begin : text.size();
    encode_ordinary(text.substr(pos, plain_end - pos), out);
    if (!match) break;
    out.push_back(match->id);
    pos = match->end;
  }
  return out;
}

void BpeTokenizer::encode_ordinary(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string normalized;
  if (nfc_) {
    normalized = nfc(text);
    text = normalized;
  }
  std::vector<std::pair<size_t, size_t>> pieces;
  splitter_->split(text, pieces);
  for (const auto& [begin, end] : pieces) bpe_encode_piece(vocab_, text.substr(begin, end - begin), out);
}

const std::string& BpeTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= bytes_by_id_.size() || kind_by_id_[id] == kUnused)
    throw Error("token id " + std::to_string(id) + " is not in this tokenizer's vocabulary (size " +
                    std::to_string(bytes_by_id_.size()) + ")",
                "the ids were made for another model");
  return bytes_by_id_[id];
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) out += token_bytes(id);
  return out;
}

std::optional<int32_t> BpeTokenizer::special_id(std::string_view name) const {
  auto it = special_ids_.find(name);
  if (it == special_ids_.end()) return std::nullopt;
  return it->second;
}

bool BpeTokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < kind_by_id_.size() && kind_by_id_[id] == kSpecial;
}

}  // namespace deltafin
