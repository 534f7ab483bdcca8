// `deltafin tokenize` and `deltafin detokenize`: the model's tokenizer from the command line.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "commands.h"
#include "tokenizer/tokenizer.h"

namespace deltafin::cli {
namespace {

std::string read_input(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + path, "check the path given to --file");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Accepts a JSON array ("[1, 2]") or ids separated by spaces and/or commas ("1 2,3").
std::vector<int32_t> parse_ids(const std::string& text) {
  const std::string bad = "--ids takes a JSON array of integers or integers separated by spaces or commas";
  std::vector<int32_t> ids;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    try {
      for (const auto& v : nlohmann::json::parse(text)) {
        if (!v.is_number_integer()) throw Error("an id is not an integer: " + v.dump(), bad);
        const auto id = v.get<int64_t>();
        if (id < INT32_MIN || id > INT32_MAX) throw Error("id out of range: " + v.dump(), bad);
        ids.push_back(static_cast<int32_t>(id));
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("cannot read the ids: ") + e.what(), bad);
    }
    return ids;
  }
  std::string cleaned = text;
  for (char& c : cleaned)
    if (c == ',') c = ' ';
  std::istringstream in(cleaned);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long id = 0;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || id < INT32_MIN || id > INT32_MAX) throw Error("not a token id: '" + word + "'", bad);
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

}  // namespace

void add_tokenize(CLI::App& app) {
  struct Options {
    std::string model_root, text, file;
    bool allow_special = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  cmd->add_option("--model-root", o->model_root, "Model folder (tiktoken.model or tokenizer.json)")->required();
  auto* text = cmd->add_option("--text", o->text, "The text to encode");
  auto* file = cmd->add_option("--file", o->file, "Read the text from this file ('-': standard input)");
  text->excludes(file);
  cmd->add_flag(
      "--allow-special", o->allow_special,
      "Turn the exact text of special tokens (e.g. <|end_of_msg|>) into their ids; by default it is plain text");
  cmd->callback([o, text, file] {
    if (text->count() == 0 && file->count() == 0) throw Error("tokenize needs --text or --file");
    const std::string input = file->count() ? read_input(o->file) : o->text;
    const auto tokenizer = load_tokenizer(o->model_root);
    std::cout << nlohmann::json(tokenizer->encode(input, o->allow_special)).dump() << "\n";
  });
}

void add_detokenize(CLI::App& app) {
  struct Options {
    std::string model_root, ids, file;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("detokenize", "Print the text of token ids (the exact bytes)");
  cmd->add_option("--model-root", o->model_root, "Model folder (tiktoken.model or tokenizer.json)")->required();
  auto* ids = cmd->add_option("--ids", o->ids, "Ids as a JSON array or separated by spaces/commas");
  auto* file = cmd->add_option("--file", o->file, "Read the ids from this file ('-': standard input)");
  ids->excludes(file);
  cmd->add_flag("--json", o->json, "Print {\"text\": ...} with broken UTF-8 shown as U+FFFD instead of raw bytes");
  cmd->callback([o, ids, file] {
    if (ids->count() == 0 && file->count() == 0) throw Error("detokenize needs --ids or --file");
    const auto tokenizer = load_tokenizer(o->model_root);
    const std::string bytes = tokenizer->decode(parse_ids(file->count() ? read_input(o->file) : o->ids));
    if (o->json) {
      std::cout << nlohmann::json{{"text", bytes}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    }
  });
}

}  // namespace deltafin::cli
