// libFuzzer target: K3 chat rendering and the streaming chat parser.
// Byte 0 picks the mode. Render mode: the rest is split into message fields; the rendered ids
// must hold exactly as many special ids as the same chat with harmless text (no injection).
// Parse mode: the rest becomes generated ids, biased towards the structural specials; events
// must be valid UTF-8, End must come at most once and nothing may follow it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "tokenizer/chat_stream_parser.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/utf8.h"
#include "fuzz_fixtures.h"

namespace {

const deltafin::Tokenizer& k3() {
  static const std::unique_ptr<deltafin::Tokenizer> tok =
      deltafin::load_tokenizer(deltafin::fuzz::fixtures_dir() + "/k3-tiny");
  return *tok;
}

size_t count_special(const deltafin::Tokenizer& tok, const std::vector<int32_t>& ids) {
  size_t n = 0;
  for (int32_t id : ids) n += tok.is_special(id);
  return n;
}

void render_mode(const deltafin::Tokenizer& tok, uint8_t flags, const std::string& rest) {
  static const char* roles[] = {"system", "user", "assistant", "tool"};
  std::vector<deltafin::ChatMessage> chat, harmless;
  // Fields are separated by 0xFF bytes: content, name, reasoning, then the next message.
  size_t pos = 0, field = 0;
  std::string parts[3];
  auto flush = [&] {
    const char* role = roles[(chat.size() + flags) % 4];
    const std::string reasoning = std::string(role) == "assistant" ? parts[2] : "";
    chat.emplace_back(role, parts[0], parts[1], reasoning);
    harmless.emplace_back(role, parts[0].empty() ? "" : "x", parts[1].empty() ? "" : "x", reasoning.empty() ? "" : "x");
    for (auto& p : parts) p.clear();
    field = 0;
  };
  while (pos < rest.size()) {
    const char c = rest[pos++];
    if (static_cast<uint8_t>(c) == 0xFF) {
      if (++field == 3) flush();
    } else {
      parts[field] += c;
    }
  }
  flush();
  deltafin::ChatOptions opt;
  opt.thinking = flags & 1;
  opt.effort = static_cast<deltafin::ReasoningEffort>((flags >> 1) & 3);
  opt.add_bos = flags & 8;
  opt.add_generation_prompt = flags & 16;
  std::vector<int32_t> ids;
  try {
    ids = deltafin::render_chat(tok, chat, opt);
  } catch (const deltafin::Error&) {
    return;  // a tool result with no tool to name is refused, never rendered
  }
  if (count_special(tok, ids) != count_special(tok, deltafin::render_chat(tok, harmless, opt))) __builtin_trap();
}

void parse_mode(const deltafin::Tokenizer& tok, uint8_t flags, const std::string& rest) {
  const int32_t structural[] = {tok.require_special_id("<|open|>"), tok.require_special_id("<|close|>"),
                                tok.require_special_id("<|sep|>"),  tok.require_special_id("<|end_of_msg|>"),
                                tok.require_special_id("[EOS]"),    tok.require_special_id("[BOS]")};
  const int32_t regular = tok.vocab_size() - 256;
  deltafin::ChatStreamParser parser(tok, flags & 1);
  bool ended = false;
  auto check = [&](const std::vector<deltafin::ChatEvent>& events) {
    for (const auto& e : events) {
      if (ended) __builtin_trap();
      if (e.kind == deltafin::ChatEvent::Kind::End) ended = true;
      else if (!deltafin::utf8::is_valid(e.text)) __builtin_trap();
    }
  };
  for (size_t i = 0; i < rest.size(); ++i) {
    const auto b = static_cast<uint8_t>(rest[i]);
    int32_t id;
    if (b < 24) id = structural[b % 6];
    else if (b < 32) id = regular + b;  // other specials
    else if (i + 1 < rest.size()) id = (b << 8 | static_cast<uint8_t>(rest[++i])) % regular;
    else id = b;
    check(parser.push(id));
    if (parser.done() != ended) __builtin_trap();
  }
  check(parser.finish());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const deltafin::Tokenizer& tok = k3();
  const std::string rest(reinterpret_cast<const char*>(data + 2), size - 2);
  if (data[0] & 1) render_mode(tok, data[1], rest);
  else parse_mode(tok, data[1], rest);
  return 0;
}
