// `deltafin render-chat`: an OpenAI-style chat request rendered exactly as `deltafin serve` renders
// it (K3's XTML format: tools, tool calls and results, reasoning, tool_choice, response_format).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "serve/api_error.h"
#include "serve/request_parser.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace deltafin::cli {

void add_render_chat(CLI::App& app) {
  struct Opts {
    std::string json_path, model_root;
    bool text = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "render-chat", "Print the prompt ids (or --text) of an OpenAI-style chat request, as the server renders it");
  cmd->add_option("--json", o->json_path, "The request body: a JSON file, or - for standard input")->required();
  cmd->add_option("--model-root", o->model_root,
                  "Model folder whose tokenizer renders the ids (default: the installed Kimi K3)");
  cmd->add_flag("--text", o->text, "Print the ids decoded (special tokens spelled out) instead of the ids");
  cmd->callback([o] {
    std::string body;
    if (o->json_path == "-") {
      body.assign(std::istreambuf_iterator<char>(std::cin), {});
    } else {
      std::ifstream f(o->json_path, std::ios::binary);
      if (!f) throw Error("cannot read " + o->json_path, "check the path given to --json");
      body.assign(std::istreambuf_iterator<char>(f), {});
    }
    const std::string root = o->model_root.empty() ? default_model_root() : o->model_root;
    const auto tok = load_tokenizer(root);
    std::vector<int32_t> ids;
    try {
      const serve::ChatRequestParts parts = serve::parse_chat_messages(serve::parse_json_body(body));
      ids = render_chat(*tok, parts.messages, parts.options);
    } catch (const serve::ApiError& e) {
      // The same words the server would answer with, and the field they are about.
      throw Error(
          "the request is refused: " + std::string(e.what()) + (e.param().empty() ? "" : " (" + e.param() + ")"),
          "fix the request body in " + o->json_path);
    }
    if (o->text) {
      const std::string text = tok->decode(ids);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
    } else {
      std::printf("%s\n", ids_json(ids).c_str());
    }
  });
}

}  // namespace deltafin::cli
